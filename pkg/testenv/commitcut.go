package testenv

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tockhq/tock/pkg/store"
)

// commitCutter stands between a store and the real Postgres and breaks the
// first connection that sends a job's create to be committed, as a Postgres
// stopped at that moment would: after passing it on (the transaction
// commits, and its answer never comes) or before (it rolls back with its
// connection). A create commits with the simple query COMMIT after its
// statements, or, made in one round trip, with the Sync that ends a batch
// holding the job's insert (an implicit transaction). Every other
// connection, and every message but that one, passes through.
type commitCutter struct {
	ln      net.Listener
	target  string
	forward bool
	armed   atomic.Bool
	wg      sync.WaitGroup
}

// CutCommit returns a second store on st's schema (a store of Store's)
// whose first transaction to commit loses its connection at the COMMIT:
// committed (committed true) or not, the store is left unanswered.
func CutCommit(t testing.TB, st *store.Store, committed bool) *store.Store {
	t.Helper()
	u, err := url.Parse(URLOf(t, st))
	if err != nil {
		t.Fatalf("cut commit: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cut commit: %v", err)
	}
	p := &commitCutter{ln: ln, target: u.Host, forward: committed}
	p.armed.Store(true)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go func() { defer p.wg.Done(); p.serve(c) }()
		}
	}()
	u.Host = ln.Addr().String()
	cut, err := store.Open(context.Background(), u.String(), 2)
	if err != nil {
		t.Fatalf("cut commit: open store: %v", err)
	}
	t.Cleanup(func() { cut.Close(); _ = ln.Close(); p.wg.Wait() })
	return cut
}

// commitMessage is pgx's COMMIT on the wire: the simple query "commit".
var commitMessage = []byte("Q\x00\x00\x00\x0bcommit\x00")

// insertJob marks a connection that creates a job: the statement is parsed
// on it (in the chunk that runs it, or in one before).
var insertJob = []byte("INSERT INTO jobs")

// beginMessage is pgx's BEGIN on the wire.
var beginMessage = []byte("Q\x00\x00\x00\x0abegin\x00")

// ends says whether chunk, sent on a connection that inserts a job
// (inserting), ends a transaction: COMMIT within one it began (inTx), or
// outside one the Sync after a batch that executes statements (not the
// Sync after a batch that only prepares them). chunk holds whole messages,
// as pgx writes them.
func ends(chunk []byte, inserting, inTx bool) bool {
	switch {
	case !inserting:
		return false
	case inTx:
		return bytes.Contains(chunk, commitMessage)
	}
	executes, syncs := false, false
	for i := 0; i+5 <= len(chunk); {
		n := int(binary.BigEndian.Uint32(chunk[i+1 : i+5]))
		switch chunk[i] {
		case 'E':
			executes = true
		case 'S':
			syncs = true
		}
		if n < 4 {
			return false
		}
		i += 1 + n
	}
	return executes && syncs
}

func (p *commitCutter) serve(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	var cut atomic.Bool             // from the COMMIT on, nothing reaches the client
	answered := make(chan struct{}) // closed when Postgres answers the COMMIT cut
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer client.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if err != nil {
				return
			}
			if cut.Load() {
				close(answered)
				return
			}
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	inserting, inTx := false, false
	for {
		n, err := client.Read(buf)
		if err != nil {
			return
		}
		chunk := buf[:n]
		inserting = inserting || bytes.Contains(chunk, insertJob)
		inTx = inTx || bytes.Contains(chunk, beginMessage)
		if ends(chunk, inserting, inTx) && p.armed.CompareAndSwap(true, false) {
			cut.Store(true)
			if p.forward {
				// Committed once Postgres answers; the answer is dropped.
				if _, err := server.Write(chunk); err == nil {
					select {
					case <-answered:
					case <-time.After(10 * time.Second):
					}
				}
			}
			return
		}
		if _, err := server.Write(chunk); err != nil {
			return
		}
	}
}
