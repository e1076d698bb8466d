package api

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// keyRequest is the optional body of POST /api/v1/users/{id}/keys.
type keyRequest struct {
	Name string `json:"name"`
	// Scopes limit what the key may do; absent, everything the user's role
	// allows.
	Scopes *[]string `json:"scopes"`
	// ExpiresAt, when set, ends the key.
	ExpiresAt *string `json:"expires_at"`
}

// MaxKeyLifetime bounds a key's expires_at.
const MaxKeyLifetime = 10 * 366 * 24 * time.Hour

// checkKeyRequest validates a new key's scopes and expiry for a user of
// role, created by caller p: a key never gets a scope its user's role does
// not allow, nor one its creator's own key lacks.
func (s *Server) checkKeyRequest(req keyRequest, role string, p principal) ([]string, time.Time, error) {
	var scopes []string
	if req.Scopes != nil {
		if len(*req.Scopes) == 0 {
			return nil, time.Time{}, apierr.Invalid("scopes", "must name at least one scope: "+strings.Join(allScopeNames(), ", "))
		}
		set, bad := parseScopes(*req.Scopes)
		if bad >= 0 {
			return nil, time.Time{}, apierr.Invalid("scopes["+strconv.Itoa(bad)+"]", "is not a scope: "+strings.Join(allScopeNames(), ", "))
		}
		if extra := set &^ roleScopes(role); extra != 0 {
			return nil, time.Time{}, apierr.Invalid("scopes", "names "+strings.Join(extra.names(), ", ")+", which a "+role+" cannot have")
		}
		scopes = set.names()
	}
	granted := roleScopes(role)
	if scopes != nil {
		granted, _ = parseScopes(scopes)
	}
	if extra := granted &^ p.scopes; extra != 0 {
		return nil, time.Time{}, apierr.New(http.StatusForbidden, apierr.CodeForbidden, "scopes",
			"your key lacks "+strings.Join(extra.names(), ", ")+", so it cannot give it; name the scopes the new key needs")
	}
	var expires time.Time
	if req.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *req.ExpiresAt)
		now := s.now()
		switch {
		case err != nil:
			return nil, time.Time{}, apierr.Invalid("expires_at", "must be an RFC 3339 time, such as 2030-01-02T15:04:05Z")
		case !t.After(now):
			return nil, time.Time{}, apierr.Invalid("expires_at", "must be in the future")
		case t.Sub(now) > MaxKeyLifetime:
			return nil, time.Time{}, apierr.Invalid("expires_at", "must be within 10 years")
		}
		expires = t.UTC()
	}
	// A key cannot outlive the key that made it: without expires_at it
	// ends with its creator, and a later one is refused.
	if !p.expires.IsZero() {
		switch {
		case expires.IsZero():
			expires = p.expires
		case expires.After(p.expires):
			return nil, time.Time{}, apierr.New(http.StatusForbidden, apierr.CodeForbidden, "expires_at",
				"your key expires at "+p.expires.Format(time.RFC3339)+", so a key it makes must expire no later")
		}
	}
	return scopes, expires, nil
}

func allScopeNames() []string { return (canJobsRead | canJobsWrite | canRunsRead | canAdmin).names() }

// createKey makes a new API key for a user: an administrator for anyone, a
// user for themself. The answer is the only time the key is shown.
func (s *Server) createKey(c *echo.Context) error {
	id, err := userID(c)
	if err != nil {
		return err
	}
	if err := selfOrAdmin(c, id); err != nil {
		return err
	}
	var req keyRequest
	if c.Request().ContentLength != 0 {
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
	}
	name, err := checkName("name", req.Name, false)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := s.store.GetUser(ctx, id)
	if err != nil {
		return userError(err)
	}
	scopes, expires, err := s.checkKeyRequest(req, u.Role, caller(c))
	if err != nil {
		return err
	}
	key, prefix, hash := newKey()
	k := &store.Key{ID: job.NewID(), UserID: id, Name: name, Prefix: prefix, CreatedAt: s.now(), Scopes: scopes, ExpiresAt: expires}
	out, err := s.store.CreateKey(ctx, k, hash, s.quotas.MaxKeys, caller(c).audit(store.ActionKeyCreate))
	if errors.Is(err, store.ErrTooManyKeys) {
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "",
			fmt.Sprintf("the user has %d live keys, the most allowed (TOCK_LIMIT_MAX_KEYS); revoke one first", s.quotas.MaxKeys))
	}
	if err != nil {
		return userError(err)
	}
	// The key's first requests may come from an address blocked for
	// someone else's bad tokens (a NAT, a CI runner's egress), to any
	// dashboard: each must let it through before it has seen it succeed.
	s.gate.Vouch(ctx, [32]byte(hash))
	view := keyView(out, u.Role)
	view.Key = key
	c.Response().Header().Set("Cache-Control", "no-store")
	return writeJSON(c, http.StatusCreated, view)
}

// listKeys lists a user's keys, revoked ones included, never the keys
// themselves: to an administrator, or to the user themself.
func (s *Server) listKeys(c *echo.Context) error {
	id, err := userID(c)
	if err != nil {
		return err
	}
	if err := selfOrAdmin(c, id); err != nil {
		return err
	}
	ctx := c.Request().Context()
	u, err := s.store.GetUser(ctx, id)
	if err != nil {
		return userError(err)
	}
	keys, err := s.store.ListKeys(ctx, id)
	if err != nil {
		return apierr.Dependency(err)
	}
	out := KeyList{Keys: make([]Key, len(keys))}
	for i, k := range keys {
		out.Keys[i] = keyView(k, u.Role)
	}
	return writeJSON(c, http.StatusOK, out)
}

// revokeKey revokes a key at once: an administrator's any key, a user's
// their own (another user's key is a 404, as if it did not exist).
func (s *Server) revokeKey(c *echo.Context) error {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return errKeyNotFound
	}
	p := caller(c)
	if !p.admin {
		// A narrowed key may not revoke a broader one of its user's: it
		// could otherwise take away the keys that can undo what it does.
		keys, err := s.store.ListKeys(c.Request().Context(), p.user)
		if err != nil {
			return apierr.Dependency(err)
		}
		for _, k := range keys {
			if k.ID == id {
				if extra := keyScopes(k, store.RoleUser) &^ p.scopes; extra != 0 {
					return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "",
						"that key has "+strings.Join(extra.names(), ", ")+", which your key lacks, so your key cannot revoke it")
				}
			}
		}
	}
	_, err = s.store.RevokeKey(c.Request().Context(), p.scope(), id, s.now(), p.audit(store.ActionKeyRevoke))
	if errors.Is(err, job.ErrNotFound) {
		return errKeyNotFound
	}
	if err != nil {
		return apierr.Dependency(err)
	}
	return c.NoContent(http.StatusNoContent)
}
