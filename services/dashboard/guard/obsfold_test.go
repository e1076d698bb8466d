package guard

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fold is a request with an obs-fold line, and refused is the same request
// as StrictListener hands it to the server.
const (
	fold    = "GET /next HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n  continued\r\n\r\n"
	refused = "GET /next HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n: continued\r\n\r\n"
)

// chunked is the head of a request with a chunked body.
const chunked = "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"

// foldCase is a connection's bytes and what the server must read of them.
type foldCase struct {
	name, in, want string
	prefix         string    // a prefix of in, or none,
	at             scanState // past which the scanner is in this state
}

// refusedAfter is a case where the scanner follows prefix to the byte,
// ready for a request, so that the fold after it is refused.
func refusedAfter(name, prefix string) foldCase {
	return foldCase{"FoldAfter" + name, prefix + fold, prefix + refused, prefix, stRequest}
}

// passedAfter is a case where the scanner stops following the connection
// in prefix, so that the fold after it passes, for Go to judge.
func passedAfter(name, prefix string) foldCase {
	return foldCase{"PassAfter" + name, prefix + fold, prefix + fold, prefix, stOff}
}

// foldCases seed FuzzObsFold too.
var foldCases = []foldCase{
	{name: "Fold", in: fold, want: refused},
	{name: "FoldWithTab", in: "GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n\tcontinued\r\n\r\n", want: "GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n:continued\r\n\r\n"},
	{name: "FoldOnFirstHeaderLine", in: "GET / HTTP/1.1\r\n Host: t\r\n\r\n", want: "GET / HTTP/1.1\r\n:Host: t\r\n\r\n"},
	{name: "FoldAfterBareLF", in: "GET / HTTP/1.1\nHost: t\nX-A: 1\n continued\n\n", want: "GET / HTTP/1.1\nHost: t\nX-A: 1\n:continued\n\n"},
	{name: "FoldInHTTP10Headers", in: "GET / HTTP/1.0\r\nX-A: 1\r\n b\r\n\r\n", want: "GET / HTTP/1.0\r\nX-A: 1\r\n:b\r\n\r\n"},
	{name: "FoldInTrailer", in: chunked + "1\r\na\r\n0\r\nX-T: 1\r\n b\r\n\r\n", want: chunked + "1\r\na\r\n0\r\nX-T: 1\r\n:b\r\n\r\n"},
	{name: "FoldPastLongRequestLine", in: "GET /?q=" + strings.Repeat("x", 1000) + " HTTP/1.1\r\nX-A: 1\r\n b\r\n\r\n",
		want: "GET /?q=" + strings.Repeat("x", 1000) + " HTTP/1.1\r\nX-A: 1\r\n:b\r\n\r\n"},
	{name: "FoldPastLongHeader", in: "GET / HTTP/1.1\r\nX-Long: " + strings.Repeat("x", 1000) + "\r\n b\r\n\r\n",
		want: "GET / HTTP/1.1\r\nX-Long: " + strings.Repeat("x", 1000) + "\r\n:b\r\n\r\n"},
	{name: "Clean", in: "GET /api/v1/jobs?limit=10 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer x\r\n\r\n",
		want: "GET /api/v1/jobs?limit=10 HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer x\r\n\r\n"},

	refusedAfter("GET", "GET / HTTP/1.1\r\nHost: t\r\n\r\n"),
	refusedAfter("BodyByLength", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\na\r\n b\r\n\tc"),
	refusedAfter("BodyAndCRLF", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\na\r\n\r\n"),
	refusedAfter("LowerCaseLength", "POST / HTTP/1.1\r\ncontent-length:  3 \r\n\r\n\n x"),
	refusedAfter("ZeroLength", "POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n"),
	refusedAfter("BareLFHeaders", "POST / HTTP/1.1\nHost: t\nContent-Length: 2\n\n\n "),
	refusedAfter("ChunkedBody", chunked+"4;name=\"v\"\r\na\r\n \r\nA \r\n\r\n\tb\r\n c\r\n\r\n0\r\n\r\n"),
	refusedAfter("ChunkExtensions", chunked+"1;a=b;c\r\n\n\r\n2\t;x\r\n\r\n\r\n0;last\r\n\r\n"),
	refusedAfter("EmptyChunkedBody", "POST / HTTP/1.1\r\ntransfer-encoding: Chunked\r\n\r\n0\r\n\r\n"),
	refusedAfter("Trailers", chunked+"3\r\n\n x\r\n0\r\nX-T: 1\r\nContent-Length: 5\r\nUpgrade: x\r\n\r\n"),
	refusedAfter("CRBeforeCRLF", "POST / HTTP/1.1\r\nContent-Length: 2\r\r\n\r\nab"),
	refusedAfter("NamesLikeFraming", "GET / HTTP/1.1\r\nX-Content-Length: 5\r\nX: Transfer-Encoding: gzip\r\n\r\n"),

	passedAfter("BadLength", "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n"),
	passedAfter("SignedLength", "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\na"),
	passedAfter("EmptyLength", "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n"),
	passedAfter("TwoLengths", "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\na"),
	passedAfter("LongLengthLine", "POST / HTTP/1.1\r\nContent-Length:"+strings.Repeat(" ", 47)+"100\r\n\r\n"+strings.Repeat("x", 100)),
	passedAfter("LengthAndChunked", "POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
	passedAfter("TwoTransferEncodings", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
	passedAfter("OtherTransferEncoding", "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"),
	passedAfter("Upgrade", "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"),
	passedAfter("Connect", "CONNECT t:443 HTTP/1.1\r\nHost: t:443\r\n\r\n"),
	passedAfter("HTTP2Preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
	passedAfter("HTTP10", "GET / HTTP/1.0\r\n\r\n"),
	passedAfter("TLS", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\n \n\t"),
	passedAfter("BareLFInChunkedLine", chunked+"1\na\r\n0\r\n\r\n"),
	passedAfter("BareLFInChunkExtension", chunked+"1;x\n\r\na\r\n0\r\n\r\n"),
	passedAfter("LongChunkSize", chunked+"00000000000000001\r\na\r\n0\r\n\r\n"),
	passedAfter("ChunkWithoutCRLF", chunked+"1\r\nab\r\n0\r\n\r\n"),
	passedAfter("LineBeginningWithCR", "GET / HTTP/1.1\r\n\rX: 1\r\n\r\n"),
	passedAfter("BadMethod", "G(T / HTTP/1.1\r\n\r\n"),
}

// scanPieces runs a new scanner over a copy of in read in pieces that end
// at cuts, and returns what the server reads and how many folds it refused.
func scanPieces(in []byte, cuts []int) ([]byte, int) {
	out := bytes.Clone(in)
	var s foldScanner
	folds, from := 0, 0
	for _, to := range append(cuts, len(out)) {
		if s.scan(out[from:to]) {
			folds++
		}
		from = to
	}
	return out, folds
}

// randomCuts cuts n bytes at random places, as reads may.
func randomCuts(r *rand.Rand, n int) []int {
	if n == 0 {
		return nil
	}
	cuts := make([]int, r.IntN(n))
	for i := range cuts {
		cuts[i] = r.IntN(n + 1)
	}
	slices.Sort(cuts)
	return cuts
}

// TestObsFoldScanner refuses the folds of every case, and changes nothing
// else, however the reads split the bytes: whole, a byte at a time, in two
// at every place, and at random places.
func TestObsFoldScanner(t *testing.T) {
	t.Parallel()
	for _, tc := range foldCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in, wantFolds := []byte(tc.in), 1
			if tc.in == tc.want {
				wantFolds = 0
			}
			var s foldScanner
			s.scan([]byte(tc.prefix))
			require.Equal(t, tc.at, s.state, "past the prefix")
			check := func(how string, cuts []int) {
				t.Helper()
				out, folds := scanPieces(in, cuts)
				require.Equal(t, tc.want, string(out), how)
				require.Equal(t, wantFolds, folds, how)
			}
			check("whole", nil)
			bytewise := make([]int, len(in))
			for i := range bytewise {
				bytewise[i] = i
			}
			check("byte by byte", bytewise)
			for i := range len(in) + 1 {
				check(fmt.Sprintf("cut at %d", i), []int{i})
			}
			r := rand.New(rand.NewPCG(1, uint64(len(in))))
			for range 100 {
				cuts := randomCuts(r, len(in))
				check(fmt.Sprintf("cut at %v", cuts), cuts)
			}
		})
	}
}

// TestObsFoldScannerAllocs scans without allocating, whatever the framing.
// Not parallel: testing.AllocsPerRun refuses to run in a parallel test.
func TestObsFoldScannerAllocs(t *testing.T) {
	var in []byte
	for _, tc := range foldCases {
		if tc.at == stRequest {
			in = append(in, tc.prefix...)
		}
	}
	buf := bytes.Clone(in)
	var s foldScanner
	allocs := testing.AllocsPerRun(10, func() {
		s = foldScanner{}
		copy(buf, in)
		for p := buf; len(p) > 0; p = p[min(len(p), 512):] {
			s.scan(p[:min(len(p), 512)])
		}
	})
	require.Zero(t, allocs)
	require.Equal(t, stRequest, s.state, "it followed every request")
}

func BenchmarkObsFold(b *testing.B) {
	var in []byte
	for len(in) < 1<<20 {
		in = append(in, "POST /api/v1/jobs HTTP/1.1\r\nHost: tock\r\nAuthorization: Bearer tock_0123456789\r\n"+
			"Content-Type: application/json\r\nContent-Length: 64\r\n\r\n"+strings.Repeat("x", 64)...)
	}
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		var s foldScanner
		for p := in; len(p) > 0; p = p[min(len(p), 4096):] {
			s.scan(p[:min(len(p), 4096)])
		}
	}
}

// FuzzObsFold holds the scanner to what it promises whatever the bytes: no
// panic; the same output however the reads split them; and at most one byte
// changed, a space or tab right after an LF, to foldMark (so bytes with no
// "\n " or "\n\t" pass unchanged).
func FuzzObsFold(f *testing.F) {
	for _, tc := range foldCases {
		f.Add([]byte(tc.in), uint64(len(tc.in)))
	}
	f.Fuzz(func(t *testing.T, in []byte, seed uint64) {
		whole, folds := scanPieces(in, nil)
		split, _ := scanPieces(in, randomCuts(rand.New(rand.NewPCG(seed, seed)), len(in)))
		require.Equal(t, whole, split, "the same bytes however they are read")
		var changed []int
		for i := range in {
			if in[i] != whole[i] {
				changed = append(changed, i)
			}
		}
		require.Len(t, changed, folds)
		require.LessOrEqual(t, folds, 1)
		for _, i := range changed {
			require.Positive(t, i)
			require.Equal(t, byte('\n'), in[i-1])
			require.Contains(t, []byte{' ', '\t'}, in[i])
			require.Equal(t, byte(foldMark), whole[i])
		}
		if !bytes.Contains(in, []byte("\n ")) && !bytes.Contains(in, []byte("\n\t")) {
			require.Equal(t, in, whole)
		}
	})
}

// serveFolds serves, on a real TCP listener (wrapped by StrictListener if
// strict), a handler that echoes the X-A header and the body, or answers
// 400 if the body cannot be read. It returns the address, the number of
// handler calls and the listener's logs.
func serveFolds(t *testing.T, strict bool) (string, *atomic.Int32, *observer.ObservedLogs) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	core, logs := observer.New(zapcore.InfoLevel)
	if strict {
		ln = StrictListener(ln, zap.New(core))
	}
	calls := new(atomic.Int32)
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
				return
			}
			_, _ = fmt.Fprintf(w, "%s|%s", r.Header.Get("X-A"), body)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = hs.Close()
		<-done
	})
	return ln.Addr().String(), calls, logs
}

// answer is a response as the test reads it.
type answer struct {
	status int
	body   string
	close  bool
}

// exchange sends raw on a new connection, at once, and reads n responses.
func exchange(t *testing.T, addr, raw string, n int) []answer {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(conn, raw)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	var answers []answer
	for range n {
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		_ = res.Body.Close()
		answers = append(answers, answer{status: res.StatusCode, body: string(body), close: res.Close})
	}
	return answers
}

// TestObsFoldServer answers 400 to a request with an obs-fold line before
// any handler runs, serves the requests without one, and, without
// StrictListener, shows what Go does: it folds the line into the value.
func TestObsFoldServer(t *testing.T) {
	t.Parallel()
	badRequest := answer{status: http.StatusBadRequest, body: "400 Bad Request", close: true}
	for name, tc := range map[string]struct {
		strict bool
		raw    string
		want   []answer
		calls  int32 // handler calls
		folds  int   // refusals logged
	}{
		"FoldedHeaderIs400": {strict: true, raw: fold, want: []answer{badRequest}, folds: 1},
		"FoldedWithTabIs400": {strict: true, raw: "GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n\tcontinued\r\n\r\n",
			want: []answer{badRequest}, folds: 1},
		"CleanRequestIs200": {strict: true, raw: "GET / HTTP/1.1\r\nHost: t\r\nX-A: 1\r\n\r\n",
			want: []answer{{status: http.StatusOK, body: "1|"}}, calls: 1},
		"PipelinedSecondFolds": {strict: true,
			raw:  "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 9\r\n\r\na\r\n b\r\n\tc" + fold,
			want: []answer{{status: http.StatusOK, body: "|a\r\n b\r\n\tc"}, badRequest}, calls: 1, folds: 1},
		"PipelinedChunkedThenFolds": {strict: true,
			raw:  chunked + "4;x=y\r\na\r\n \r\n0\r\nX-T: 1\r\n\r\n" + fold,
			want: []answer{{status: http.StatusOK, body: "|a\r\n "}, badRequest}, calls: 1, folds: 1},
		"FoldedTrailerFailsTheBodyRead": {strict: true, raw: chunked + "1\r\na\r\n0\r\nX-T: 1\r\n b\r\n\r\n",
			want: []answer{{status: http.StatusBadRequest, body: "body: malformed MIME header line: \":b\"\n", close: true}}, calls: 1, folds: 1},
		"GoFoldsWithoutStrictListener": {strict: false, raw: fold,
			want: []answer{{status: http.StatusOK, body: "1 continued|"}}, calls: 1},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr, calls, logs := serveFolds(t, tc.strict)
			require.Equal(t, tc.want, exchange(t, addr, tc.raw, len(tc.want)))
			require.Equal(t, tc.calls, calls.Load(), "handler calls")
			require.Equal(t, tc.folds, logs.FilterMessage("obs_fold_refused").Len(), "refusals logged")
		})
	}
}
