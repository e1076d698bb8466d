package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// listAudit pages through the audit log, newest first, filtered by actor,
// job (or any target), action and time (admin only).
func (s *Server) listAudit(c *echo.Context) error {
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	f := store.AuditFilter{Limit: limit + 1, Action: c.QueryParam("action")}
	for _, p := range []struct {
		name string
		dst  *uuid.UUID
	}{{"actor", &f.Actor}, {"job", &f.Target}, {"target", &f.Target}} {
		if v := c.QueryParam(p.name); v != "" {
			if *p.dst, err = uuid.Parse(v); err != nil {
				return apierr.Invalid(p.name, "must be a UUID")
			}
		}
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := c.QueryParam(p.name); v != "" {
			if *p.dst, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return apierr.Invalid(p.name, "is not an RFC 3339 time with offset, such as 2030-01-02T15:04:05Z")
			}
		}
	}
	if v := c.QueryParam("cursor"); v != "" {
		if f.Before, err = parseAuditCursor(v); err != nil {
			return apierr.Invalid("cursor", "is not a cursor this API returned")
		}
	}
	entries, err := s.store.ListAudit(c.Request().Context(), f)
	if err != nil {
		return apierr.Dependency(err)
	}
	var out AuditList
	entries, out.NextCursor = page(entries, limit, func(e store.AuditEntry) string { return auditCursor(e.ID) })
	out.Entries = make([]AuditEntry, 0, len(entries))
	for _, e := range entries {
		out.Entries = append(out.Entries, AuditEntry{ID: e.ID, At: Time{e.At}, Actor: e.Actor, Action: e.Action,
			TargetType: e.TargetType, TargetID: e.TargetID, Change: e.Change})
	}
	return writeJSON(c, http.StatusOK, out)
}
