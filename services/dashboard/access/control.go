// Package access decides who a dashboard request acts for, and what it may
// do: it checks the bearer token (the admin token or an API key) or the
// browser's session cookie, keeps the scopes each route needs, and mints
// keys and sessions. What a request acts for is a Principal, which api's
// handlers read (Caller) to scope queries and audit entries. Before any
// lookup, access asks guard whether the client's address may still try.
package access

import (
	"time"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/guard"
)

// Deps is what a Control needs, built once by the API.
type Deps struct {
	// Store finds keys and sessions, and keeps the ones minted here.
	Store *store.Store
	// Gate limits failed authentications per client address; it must not be
	// nil (guard.New with no limiter limits nothing).
	Gate *guard.Gate
	// Logger logs the lookups that half-failed; nil logs nothing.
	Logger *zap.Logger
	// Clock reads the time; nil means time.Now.
	Clock func() time.Time
	// AdminToken is the bearer token of the bootstrap administrator; empty
	// admits no one with it.
	AdminToken string
}

// Control checks credentials and opens and ends sessions.
type Control struct {
	store *store.Store
	gate  *guard.Gate
	log   *zap.Logger
	clock func() time.Time
	token []byte
}

// New builds a Control on d, filling defaults for the zero fields.
func New(d Deps) *Control {
	a := &Control{store: d.Store, gate: d.Gate, log: d.Logger, clock: d.Clock, token: []byte(d.AdminToken)}
	if a.log == nil {
		a.log = zap.NewNop()
	}
	if a.clock == nil {
		a.clock = time.Now
	}
	return a
}
