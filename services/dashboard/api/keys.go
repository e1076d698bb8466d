package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
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

// createKey makes a new API key for a user: an administrator for anyone, a
// user for themself. The answer is the only time the key is shown.
func (s *Server) createKey(c *echo.Context) error {
	id, err := userID(c)
	if err != nil {
		return err
	}
	if err := access.SelfOrAdmin(c, id); err != nil {
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
	p := access.Caller(c)
	scopes, expires, err := p.Grant(u.Role, req.Scopes, req.ExpiresAt, s.now())
	if err != nil {
		return err
	}
	k := &store.Key{ID: job.NewID(), UserID: id, Name: name, CreatedAt: s.now(), Scopes: scopes, ExpiresAt: expires}
	key, out, err := s.access.Mint(ctx, k, s.quotas.MaxKeys, p.Audit(store.ActionKeyCreate))
	if errors.Is(err, store.ErrTooManyKeys) {
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "",
			fmt.Sprintf("the user has %d live keys, the most allowed (TOCK_LIMIT_MAX_KEYS); revoke one first", s.quotas.MaxKeys))
	}
	if err != nil {
		return userError(err)
	}
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
	if err := access.SelfOrAdmin(c, id); err != nil {
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
	p := access.Caller(c)
	if !p.Admin {
		// A narrowed key may not revoke a broader one of its user's: it
		// could otherwise take away the keys that can undo what it does.
		keys, err := s.store.ListKeys(c.Request().Context(), p.User)
		if err != nil {
			return apierr.Dependency(err)
		}
		for _, k := range keys {
			if k.ID == id {
				if err := p.MayRevoke(k); err != nil {
					return err
				}
			}
		}
	}
	_, err = s.store.RevokeKey(c.Request().Context(), p.Owner(), id, s.now(), p.Audit(store.ActionKeyRevoke))
	if errors.Is(err, job.ErrNotFound) {
		return errKeyNotFound
	}
	if err != nil {
		return apierr.Dependency(err)
	}
	return c.NoContent(http.StatusNoContent)
}
