package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/lifecycle"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// maxUserNameLen bounds a user's or a key's name, in characters.
const maxUserNameLen = 200

var (
	errUserNotFound = apierr.New(http.StatusNotFound, apierr.CodeNotFound, "", "user not found")
	errKeyNotFound  = apierr.New(http.StatusNotFound, apierr.CodeNotFound, "", "key not found")
)

// userRequest is the body of POST /api/v1/users.
type userRequest struct {
	Name   string  `json:"name"`
	Role   string  `json:"role"`
	Limits *Limits `json:"limits"`
}

// userPatch is the body of PATCH /api/v1/users/{id}: the fields given change;
// limits, when given, replace the user's limits as a whole ({} clears them).
type userPatch struct {
	Name   *string `json:"name"`
	Limits *Limits `json:"limits"`
}

// checkName trims a user's or an API key's name and checks it is present
// (if required), not too long, and fit to show as sent (jobspec.Showable),
// as a job's name is: the dashboard and the audit log show it.
func checkName(field, name string, required bool) (string, error) {
	trimmed := strings.TrimSpace(name)
	switch {
	case trimmed == "" && required:
		return "", apierr.Invalid(field, "is required")
	case utf8.RuneCountInString(trimmed) > maxUserNameLen:
		return "", apierr.Invalid(field, fmt.Sprintf("is longer than %d characters", maxUserNameLen))
	case !jobspec.Showable(name):
		return "", apierr.Invalid(field, jobspec.NotShowable)
	}
	return trimmed, nil
}

// checkLimits validates limits given for a user.
func checkLimits(l *Limits) (store.Limits, error) {
	if l == nil {
		return store.Limits{}, nil
	}
	positive := []struct {
		field string
		v     *int
	}{
		{"limits.requests_per_minute", l.RequestsPerMinute},
		{"limits.request_burst", l.RequestBurst},
		{"limits.jobs_per_minute", l.JobsPerMinute},
		{"limits.job_burst", l.JobBurst},
	}
	for _, p := range positive {
		if p.v != nil && (*p.v < 1 || *p.v > 10_000_000) {
			return store.Limits{}, apierr.Invalid(p.field, "must be an integer from 1 to 10000000")
		}
	}
	if l.MaxActiveJobs != nil && (*l.MaxActiveJobs < 0 || *l.MaxActiveJobs > 1_000_000_000) {
		return store.Limits{}, apierr.Invalid("limits.max_active_jobs", "must be an integer from 0 (no cap) to 1000000000")
	}
	if l.OccurrencesPerMinute != nil && (*l.OccurrencesPerMinute < 0 || *l.OccurrencesPerMinute > 10_000_000) {
		return store.Limits{}, apierr.Invalid("limits.occurrences_per_minute", "must be an integer from 0 (no cap) to 10000000")
	}
	if l.OccurrencesPerSecond != nil && (*l.OccurrencesPerSecond < 0 || *l.OccurrencesPerSecond > 10_000_000) {
		return store.Limits{}, apierr.Invalid("limits.occurrences_per_second", "must be an integer from 0 (no cap) to 10000000")
	}
	if l.MaxRunning != nil && (*l.MaxRunning < 1 || *l.MaxRunning > 10_000_000) {
		return store.Limits{}, apierr.Invalid("limits.max_running", "must be an integer from 1 to 10000000")
	}
	return store.Limits(*l), nil
}

// createUser adds a user (admin only).
func (s *Server) createUser(c *echo.Context) error {
	var req userRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	name, err := checkName("name", req.Name, true)
	if err != nil {
		return err
	}
	if req.Role != store.RoleAdmin && req.Role != store.RoleUser {
		return apierr.Invalid("role", "must be admin or user")
	}
	limits, err := checkLimits(req.Limits)
	if err != nil {
		return err
	}
	u := &store.User{ID: job.NewID(), Name: name, Role: req.Role, CreatedAt: s.now(), Limits: limits}
	out, err := s.store.CreateUser(c.Request().Context(), u, access.Caller(c).Audit(store.ActionUserCreate))
	if err != nil {
		return apierr.Dependency(err)
	}
	if out.Limits.MaxRunning != nil {
		s.syncOwnerCap(c.Request().Context(), out)
	}
	return writeJSON(c, http.StatusCreated, s.userView(out))
}

// listUsers pages through every user, oldest first (admin only).
func (s *Server) listUsers(c *echo.Context) error {
	limit, err := pageSize(c)
	if err != nil {
		return err
	}
	var after uuid.UUID
	if v := c.QueryParam("cursor"); v != "" {
		if after, err = parseJobCursor(v); err != nil {
			return apierr.Invalid("cursor", "is not a cursor this API returned")
		}
	}
	users, err := s.store.ListUsers(c.Request().Context(), after, limit+1)
	if err != nil {
		return apierr.Dependency(err)
	}
	var out UserList
	users, out.NextCursor = page(users, limit, func(u *store.User) string { return jobCursor(u.ID) })
	out.Users = make([]User, 0, len(users))
	for _, u := range users {
		out.Users = append(out.Users, s.userView(u))
	}
	return writeJSON(c, http.StatusOK, out)
}

// me answers who the caller is, with the limits that hold for them.
func (s *Server) me(c *echo.Context) error {
	u, err := s.store.GetUser(c.Request().Context(), access.Caller(c).User)
	if err != nil {
		return apierr.Dependency(err)
	}
	v := s.userView(u)
	v.Scopes = access.Caller(c).Scopes.Names()
	return writeJSON(c, http.StatusOK, v)
}

// userID parses the :id path parameter of the users routes; a malformed id
// names no user.
func userID(c *echo.Context) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return uuid.Nil, errUserNotFound
	}
	return id, nil
}

// userError maps a store error about a user.
func userError(err error) error {
	if errors.Is(err, job.ErrNotFound) {
		return errUserNotFound
	}
	return apierr.Dependency(err)
}

// getUser shows one user: to an administrator, or to the user themself.
func (s *Server) getUser(c *echo.Context) error {
	id, err := userID(c)
	if err != nil {
		return err
	}
	if err := access.SelfOrAdmin(c, id); err != nil {
		return err
	}
	u, err := s.store.GetUser(c.Request().Context(), id)
	if err != nil {
		return userError(err)
	}
	return writeJSON(c, http.StatusOK, s.userView(u))
}

// patchUser renames a user or sets their limits (admin only).
func (s *Server) patchUser(c *echo.Context) error {
	id, err := userID(c)
	if err != nil {
		return err
	}
	var p userPatch
	if err := decodeJSON(c, &p); err != nil {
		return err
	}
	var name string
	if p.Name != nil {
		if name, err = checkName("name", *p.Name, true); err != nil {
			return err
		}
	}
	limits, err := checkLimits(p.Limits)
	if err != nil {
		return err
	}
	return s.updateUser(c, id, store.ActionUserUpdate, func(u *store.User) error {
		if p.Name != nil {
			u.Name = name
		}
		if p.Limits != nil {
			u.Limits = limits
		}
		return nil
	})
}

// disableUser stops a user: their keys stop working at once and their
// scheduled jobs are paused (admin only). The bootstrap administrator cannot
// be disabled: TOCK_ADMIN_TOKEN is the way back in.
func (s *Server) disableUser(c *echo.Context) error {
	id, err := userID(c)
	if err != nil {
		return err
	}
	if id == store.BootstrapAdmin {
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "", "the bootstrap administrator cannot be disabled")
	}
	now := s.now()
	err = s.updateUser(c, id, store.ActionUserDisable, func(u *store.User) error {
		if !u.DisabledAt.IsZero() {
			return fmt.Errorf("%w: the user is already disabled", job.ErrConflict)
		}
		u.DisabledAt = now
		return nil
	})
	if err == nil {
		// Their jobs are paused; what of theirs is running is stopped too.
		s.jobs.AbortOwner(c.Request().Context(), id, access.Caller(c).User, now)
	}
	return err
}

// eraseUser removes a user's data for an erasure request (admin only):
// their jobs, runs, labels and keys are deleted, their running attempts
// stopped, and they stay disabled, renamed, with audit entries that record
// what happened but not the data. Neither the bootstrap administrator nor
// the caller can be erased.
func (s *Server) eraseUser(c *echo.Context) error {
	id, err := userID(c)
	if err != nil {
		return err
	}
	if id == store.BootstrapAdmin || id == access.Caller(c).User {
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "", "neither the bootstrap administrator nor yourself can be erased")
	}
	now := s.now()
	erased, err := s.store.EraseUser(c.Request().Context(), id, now, access.Caller(c).Audit(store.ActionUserErase))
	if errors.Is(err, job.ErrNotFound) {
		return errUserNotFound
	}
	if err != nil {
		return apierr.Dependency(err)
	}
	s.jobs.AbortOwner(c.Request().Context(), id, access.Caller(c).User, now)
	return writeJSON(c, http.StatusOK, erased)
}

// enableUser lets a disabled user back in (admin only). Their paused jobs
// stay paused until someone resumes them.
func (s *Server) enableUser(c *echo.Context) error {
	id, err := userID(c)
	if err != nil {
		return err
	}
	return s.updateUser(c, id, store.ActionUserEnable, func(u *store.User) error {
		if u.DisabledAt.IsZero() {
			return fmt.Errorf("%w: the user is not disabled", job.ErrConflict)
		}
		u.DisabledAt = time.Time{}
		return nil
	})
}

func (s *Server) updateUser(c *echo.Context, id uuid.UUID, action string, edit store.UserEdit) error {
	var refused error
	u, err := s.store.UpdateUser(c.Request().Context(), id, s.now(), func(u *store.User) error {
		refused = edit(u)
		return refused
	}, access.Caller(c).Audit(action))
	if err != nil {
		if refused != nil && errors.Is(err, job.ErrConflict) {
			msg, _ := strings.CutPrefix(refused.Error(), job.ErrConflict.Error()+": ")
			return apierr.New(http.StatusConflict, apierr.CodeConflict, "", msg)
		}
		return userError(err)
	}
	s.syncOwnerCap(c.Request().Context(), u)
	return writeJSON(c, http.StatusOK, s.userView(u))
}

// syncOwnerCap records a user's own cap on attempts in flight (max_running)
// for the scheduler's publishers, at once. It is best effort: the scheduler's
// reconciler records every user's within seconds anyway.
func (s *Server) syncOwnerCap(ctx context.Context, u *store.User) {
	if s.queue == nil {
		return
	}
	cap := 0
	if u.DisabledAt.IsZero() && u.Limits.MaxRunning != nil {
		cap = *u.Limits.MaxRunning
	}
	ctx, cancel := lifecycle.AfterCommit(ctx)
	defer cancel()
	if err := s.queue.SetOwnerCap(ctx, u.ID, cap); err != nil {
		s.log.Warn("owner_cap_not_recorded", zap.Stringer("user_id", u.ID), zap.Error(err))
	}
}

// userJobs lists one user's jobs, finished ones included, newest first, each
// with its next run and its last run's outcome (admin only).
func (s *Server) userJobs(c *echo.Context) error {
	id, err := userID(c)
	if err != nil {
		return err
	}
	if _, err := s.store.GetUser(c.Request().Context(), id); err != nil {
		return userError(err)
	}
	return s.pageJobs(c, store.JobFilter{Owner: id})
}
