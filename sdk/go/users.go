package tock

import (
	"context"
	"iter"
	"net/http"
	"net/url"
)

// UsersService holds the routes under /api/v1/users; all but a user's own
// keys need an administrator.
type UsersService struct{ c *Client }

// Create adds a user.
func (s *UsersService) Create(ctx context.Context, u UserCreate) (*User, error) {
	return s.user(ctx, call{method: http.MethodPost, path: "/api/v1/users", body: u})
}

// List returns one page of users; limit 0 is the server's default.
func (s *UsersService) List(ctx context.Context, limit int, cursor string) (*UserList, error) {
	q := query{}
	q.int("limit", limit)
	q.str("cursor", cursor)
	var out UserList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: "/api/v1/users", query: url.Values(q)}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// All yields every user.
func (s *UsersService) All(ctx context.Context) iter.Seq2[User, error] {
	return all(ctx, "", func(ctx context.Context, cursor string) ([]User, string, error) {
		page, err := s.List(ctx, 0, cursor)
		if err != nil {
			return nil, "", err
		}
		return page.Users, page.NextCursor, nil
	})
}

// Get returns one user.
func (s *UsersService) Get(ctx context.Context, id string) (*User, error) {
	return s.user(ctx, call{method: http.MethodGet, path: path("/api/v1/users", id)})
}

// Update renames a user or sets their limits.
func (s *UsersService) Update(ctx context.Context, id string, u UserUpdate) (*User, error) {
	return s.user(ctx, call{method: http.MethodPatch, path: path("/api/v1/users", id), body: u})
}

// Disable stops a user's keys, pauses their scheduled jobs and aborts their
// running attempts.
func (s *UsersService) Disable(ctx context.Context, id string) (*User, error) {
	return s.user(ctx, call{method: http.MethodPost, path: path("/api/v1/users", id, "disable")})
}

// Enable lets a disabled user back in.
func (s *UsersService) Enable(ctx context.Context, id string) (*User, error) {
	return s.user(ctx, call{method: http.MethodPost, path: path("/api/v1/users", id, "enable")})
}

func (s *UsersService) user(ctx context.Context, rq call) (*User, error) {
	var u User
	if err := s.c.do(ctx, rq, &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// Erase deletes a user's jobs, runs, labels and keys, disables and renames
// them, and reduces the audit entries about them.
func (s *UsersService) Erase(ctx context.Context, id string) (*Erased, error) {
	var out Erased
	if err := s.c.do(ctx, call{method: http.MethodPost, path: path("/api/v1/users", id, "erase")}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Jobs returns one page of a user's whole job history.
func (s *UsersService) Jobs(ctx context.Context, id string, f JobFilter) (*JobList, error) {
	var out JobList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/users", id, "jobs"), query: f.query()}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// KeysService holds the routes on API keys.
type KeysService struct{ c *Client }

// The scopes a key may carry.
const (
	ScopeJobsRead  = "jobs:read"
	ScopeJobsWrite = "jobs:write"
	ScopeRunsRead  = "runs:read"
	ScopeAdmin     = "admin"
)

// Create makes a new key for the user (an administrator, or the user),
// with every scope the user's role allows.
func (s *KeysService) Create(ctx context.Context, userID, name string) (*Key, error) {
	return s.CreateWith(ctx, userID, KeyOptions{Name: name})
}

// CreateWith makes a new key for the user with opts: a read-only key is
// KeyOptions{Scopes: []string{ScopeJobsRead, ScopeRunsRead}}.
func (s *KeysService) CreateWith(ctx context.Context, userID string, opts KeyOptions) (*Key, error) {
	body := opts
	var k Key
	if err := s.c.do(ctx, call{method: http.MethodPost, path: path("/api/v1/users", userID, "keys"), body: body}, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// List returns the user's keys.
func (s *KeysService) List(ctx context.Context, userID string) ([]Key, error) {
	var out keyList
	if err := s.c.do(ctx, call{method: http.MethodGet, path: path("/api/v1/users", userID, "keys")}, &out); err != nil {
		return nil, err
	}
	return out.Keys, nil
}

// Revoke stops a key at once.
func (s *KeysService) Revoke(ctx context.Context, id string) error {
	return s.c.do(ctx, call{method: http.MethodDelete, path: path("/api/v1/keys", id)}, nil)
}
