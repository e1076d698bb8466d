package api

import (
	"errors"
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
)

// keyRequest is the optional body of POST /api/v1/users/{id}/keys.
type keyRequest struct {
	Name string `json:"name"`
}

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
	key, prefix, hash := newKey()
	k := &store.Key{ID: job.NewID(), UserID: id, Name: name, Prefix: prefix, CreatedAt: s.now()}
	out, err := s.store.CreateKey(c.Request().Context(), k, hash, caller(c).audit(store.ActionKeyCreate))
	if err != nil {
		return userError(err)
	}
	view := keyView(out)
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
	if _, err := s.store.GetUser(ctx, id); err != nil {
		return userError(err)
	}
	keys, err := s.store.ListKeys(ctx, id)
	if err != nil {
		return dependency(err)
	}
	out := KeyList{Keys: make([]Key, len(keys))}
	for i, k := range keys {
		out.Keys[i] = keyView(k)
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
	_, err = s.store.RevokeKey(c.Request().Context(), p.scope(), id, s.now(), p.audit(store.ActionKeyRevoke))
	if errors.Is(err, job.ErrNotFound) {
		return errKeyNotFound
	}
	if err != nil {
		return dependency(err)
	}
	return c.NoContent(http.StatusNoContent)
}
