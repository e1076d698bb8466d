package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/store"
)

// actor is who makes the audited changes of these tests.
var actor = store.BootstrapAdmin

func intp(n int) *int { return &n }

// addUser creates a user with role RoleUser, recording nothing.
func (b *bundle) addUser(t *testing.T, name string, limits store.Limits) *store.User {
	t.Helper()
	u, err := b.st.CreateUser(b.ctx, &store.User{ID: job.NewID(), Name: name, Role: store.RoleUser, CreatedAt: b.now, Limits: limits}, store.Audit{})
	require.NoError(t, err)
	return u
}

// addKey creates a key of user with the given prefix and a hash derived from
// it, recording nothing.
func (b *bundle) addKey(t *testing.T, user uuid.UUID, prefix string, at time.Time) *store.Key {
	t.Helper()
	k, err := b.st.CreateKey(b.ctx, &store.Key{ID: job.NewID(), UserID: user, Name: "key " + prefix, Prefix: prefix, CreatedAt: at},
		[]byte("hash of "+prefix), 0, store.Audit{})
	require.NoError(t, err)
	return k
}

// auditLog returns the entries f selects, newest first; a zero limit means 1000.
func (b *bundle) auditLog(t *testing.T, f store.AuditFilter) []store.AuditEntry {
	t.Helper()
	if f.Limit == 0 {
		f.Limit = 1000
	}
	got, err := b.st.ListAudit(b.ctx, f)
	require.NoError(t, err)
	return got
}

// onlyAudit returns the one entry f selects.
func (b *bundle) onlyAudit(t *testing.T, f store.AuditFilter) store.AuditEntry {
	t.Helper()
	got := b.auditLog(t, f)
	require.Len(t, got, 1)
	return got[0]
}

// jobCount counts the stored jobs of owner.
func (b *bundle) jobCount(t *testing.T, owner uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT count(*) FROM jobs WHERE owner_id = $1`, owner).Scan(&n))
	return n
}

func TestUsers(t *testing.T) {
	t.Parallel()

	t.Run("RoundTripsWithLimits", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		in := &store.User{ID: job.NewID(), Name: "ada", Role: store.RoleAdmin, CreatedAt: b.now,
			Limits: store.Limits{MaxActiveJobs: intp(5), RequestsPerMinute: intp(0)}}
		created, err := b.st.CreateUser(b.ctx, in, store.Audit{Actor: actor, Action: store.ActionUserCreate})
		require.NoError(t, err)
		require.Equal(t, in, created)

		got, err := b.st.GetUser(b.ctx, in.ID)
		require.NoError(t, err)
		require.Equal(t, in, got)
		require.NotNil(t, got.Limits.RequestsPerMinute, "a limit set to zero is set, not absent")
		require.Equal(t, 0, *got.Limits.RequestsPerMinute)
		require.Nil(t, got.Limits.RequestBurst)
		require.Nil(t, got.Limits.JobsPerMinute)
		require.Nil(t, got.Limits.JobBurst)

		var raw string
		require.NoError(t, b.st.Pool().QueryRow(b.ctx, `SELECT limits::text FROM users WHERE id = $1`, in.ID).Scan(&raw))
		require.JSONEq(t, `{"max_active_jobs":5,"requests_per_minute":0}`, raw, "unset limits are not stored")

		e := b.onlyAudit(t, store.AuditFilter{Target: in.ID})
		require.Equal(t, store.ActionUserCreate, e.Action)
		require.Equal(t, store.TargetUser, e.TargetType)
		require.Equal(t, actor, e.Actor)
		require.True(t, e.At.Equal(b.now))
		require.JSONEq(t, `{"name":"ada","role":"admin","disabled":false,"limits":{"max_active_jobs":5,"requests_per_minute":0}}`, string(e.Change))
	})

	t.Run("UnsetLimitsStayNil", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		got, err := b.st.GetUser(b.ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, store.Limits{}, got.Limits)
		require.True(t, got.DisabledAt.IsZero())
		require.Empty(t, b.auditLog(t, store.AuditFilter{}), "a zero Audit records nothing")
	})

	t.Run("GetUnknownIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.st.GetUser(b.ctx, job.NewID())
		require.ErrorIs(t, err, job.ErrNotFound)
	})

	t.Run("DuplicateIDIsConflict", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		_, err := b.st.CreateUser(b.ctx, u, store.Audit{})
		require.ErrorIs(t, err, job.ErrConflict)
	})

	t.Run("ListsInIDOrderFromTheBootstrapAdmin", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		want := []uuid.UUID{store.BootstrapAdmin}
		for i := range 5 {
			want = append(want, b.addUser(t, fmt.Sprintf("user %d", i), store.Limits{}).ID)
		}

		all, err := b.st.ListUsers(b.ctx, uuid.Nil, 100)
		require.NoError(t, err)
		got := make([]uuid.UUID, len(all))
		for i, u := range all {
			got[i] = u.ID
		}
		require.Equal(t, want, got)
		require.Equal(t, "admin", all[0].Name)
		require.Equal(t, store.RoleAdmin, all[0].Role)

		var pages [][]uuid.UUID
		after := uuid.Nil
		for {
			page, err := b.st.ListUsers(b.ctx, after, 2)
			require.NoError(t, err)
			if len(page) == 0 {
				break
			}
			ids := make([]uuid.UUID, len(page))
			for i, u := range page {
				ids[i] = u.ID
			}
			pages = append(pages, ids)
			after = ids[len(ids)-1]
		}
		require.Equal(t, [][]uuid.UUID{want[0:2], want[2:4], want[4:6]}, pages)
	})

	t.Run("UpdateRecordsChangedFields", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{JobBurst: intp(10)})
		at := b.now.Add(time.Minute)

		got, err := b.st.UpdateUser(b.ctx, u.ID, at, func(u *store.User) error {
			u.Name = "robert"
			u.Limits.MaxActiveJobs = intp(2)
			return nil
		}, store.Audit{Actor: actor, Action: store.ActionUserUpdate})
		require.NoError(t, err)
		require.Equal(t, "robert", got.Name)
		require.Equal(t, store.Limits{JobBurst: intp(10), MaxActiveJobs: intp(2)}, got.Limits)
		stored, err := b.st.GetUser(b.ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, got, stored)

		e := b.onlyAudit(t, store.AuditFilter{Target: u.ID})
		require.Equal(t, store.ActionUserUpdate, e.Action)
		require.Equal(t, store.TargetUser, e.TargetType)
		require.Equal(t, actor, e.Actor)
		require.True(t, e.At.Equal(at))
		require.JSONEq(t, `{
			"name": {"from": "bob", "to": "robert"},
			"limits": {"from": {"job_burst": 10}, "to": {"job_burst": 10, "max_active_jobs": 2}}
		}`, string(e.Change), "only what changed")
	})

	t.Run("DisablingPausesOnlyTheUsersScheduledJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u, other := b.addUser(t, "bob", store.Limits{}), b.addUser(t, "carol", store.Limits{})
		due := b.now.Add(time.Hour)
		scheduled := newJob(u.ID, due)
		claimed := newJob(u.ID, due, func(j *job.Job) { j.DueAt = time.Time{} })
		recurrent := newJob(u.ID, due, recurring(t, due))
		pausedByUser := newJob(u.ID, due, func(j *job.Job) { j.Status, j.DueAt = job.StatusPaused, time.Time{} })
		completed := newJob(u.ID, b.now, func(j *job.Job) { j.DueAt = time.Time{} }) // claimed, so its run ends it
		cancelled := newJob(u.ID, due)
		others := newJob(other.ID, due)
		b.create(t, scheduled, claimed, recurrent, pausedByUser, completed, cancelled, others)
		b.finish(t, b.outcome(t, firstAttempt(completed), job.RunCompleted))
		_, _, err := b.st.CancelJob(b.ctx, u.ID, cancelled.ID, b.now, store.Audit{}, nil)
		require.NoError(t, err)
		untouched := map[uuid.UUID]*job.Job{}
		for _, j := range []*job.Job{pausedByUser, completed, cancelled, others} {
			untouched[j.ID] = b.job(t, j.ID)
		}

		at := b.now.Add(time.Minute)
		got, err := b.st.UpdateUser(b.ctx, u.ID, at, func(u *store.User) error {
			u.DisabledAt = at
			return nil
		}, store.Audit{Actor: actor, Action: store.ActionUserDisable})
		require.NoError(t, err)
		require.True(t, got.DisabledAt.Equal(at))

		for _, j := range []*job.Job{scheduled, claimed, recurrent} {
			p := b.job(t, j.ID)
			require.Equal(t, job.StatusPaused, p.Status, j.Name)
			require.Equal(t, store.PausedOwnerDisabled, p.PausedReason)
			require.Equal(t, j.Generation+1, p.Generation, "what Redis holds of it goes stale")
			require.True(t, p.DueAt.IsZero(), "the loader no longer claims it")
			require.True(t, p.UpdatedAt.Equal(at))
			part, hour := b.placement(t, j.ID)
			require.Equal(t, "jobs_idle", part)
			require.Equal(t, -1, hour)
		}
		for id, before := range untouched {
			require.Equal(t, before, b.job(t, id), "only the user's scheduled jobs are paused")
		}
		require.Equal(t, []uuid.UUID{others.ID}, ids(b.claim(t, time.Time{}, due.Add(time.Hour), 100)),
			"only the other user's job is left to claim")

		e := b.onlyAudit(t, store.AuditFilter{Target: u.ID})
		require.Equal(t, store.ActionUserDisable, e.Action)
		require.JSONEq(t, `{"disabled": {"from": false, "to": true}, "jobs_paused": 3}`, string(e.Change))
	})

	t.Run("EnablingResumesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		j := newJob(u.ID, b.now.Add(time.Hour))
		b.create(t, j)
		_, err := b.st.UpdateUser(b.ctx, u.ID, b.now, func(u *store.User) error {
			u.DisabledAt = b.now
			return nil
		}, store.Audit{})
		require.NoError(t, err)

		got, err := b.st.UpdateUser(b.ctx, u.ID, b.now.Add(time.Minute), func(u *store.User) error {
			u.DisabledAt = time.Time{}
			return nil
		}, store.Audit{Actor: actor, Action: store.ActionUserEnable})
		require.NoError(t, err)
		require.True(t, got.DisabledAt.IsZero())
		require.Equal(t, job.StatusPaused, b.job(t, j.ID).Status, "the owner or an administrator resumes what they choose")

		e := b.onlyAudit(t, store.AuditFilter{Target: u.ID})
		require.Equal(t, store.ActionUserEnable, e.Action)
		require.JSONEq(t, `{"disabled": {"from": true, "to": false}}`, string(e.Change))
	})

	t.Run("RefusedEditChangesNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		j := newJob(u.ID, b.now.Add(time.Hour))
		b.create(t, j)
		refusal := fmt.Errorf("%w: no", job.ErrConflict)

		_, err := b.st.UpdateUser(b.ctx, u.ID, b.now, func(u *store.User) error {
			u.Name, u.DisabledAt, u.Limits.MaxActiveJobs = "robert", b.now, intp(1)
			return refusal
		}, store.Audit{Actor: actor, Action: store.ActionUserDisable})
		require.ErrorIs(t, err, refusal)

		got, err := b.st.GetUser(b.ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, u, got)
		require.Equal(t, job.StatusScheduled, b.job(t, j.ID).Status)
		require.Empty(t, b.auditLog(t, store.AuditFilter{}))
	})

	t.Run("UpdateUnknownIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.st.UpdateUser(b.ctx, job.NewID(), b.now, func(*store.User) error { return nil }, store.Audit{Actor: actor, Action: store.ActionUserUpdate})
		require.ErrorIs(t, err, job.ErrNotFound)
		require.Empty(t, b.auditLog(t, store.AuditFilter{}))
	})
}

func TestKeys(t *testing.T) {
	t.Parallel()

	t.Run("CreateForUnknownUserIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.st.CreateKey(b.ctx, &store.Key{ID: job.NewID(), UserID: job.NewID(), Prefix: "abc", CreatedAt: b.now},
			[]byte("h"), 0, store.Audit{Actor: actor, Action: store.ActionKeyCreate})
		require.ErrorIs(t, err, job.ErrNotFound)
		require.Empty(t, b.auditLog(t, store.AuditFilter{}))
	})

	t.Run("CreateRecordsPrefixNeverHash", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		in := &store.Key{ID: job.NewID(), UserID: u.ID, Name: "ci", Prefix: "pfx1", CreatedAt: b.now}
		k, err := b.st.CreateKey(b.ctx, in, []byte("s3cr3t-hash"), 0, store.Audit{Actor: actor, Action: store.ActionKeyCreate})
		require.NoError(t, err)
		require.Equal(t, in, k)

		e := b.onlyAudit(t, store.AuditFilter{Target: k.ID})
		require.Equal(t, store.ActionKeyCreate, e.Action)
		require.Equal(t, store.TargetKey, e.TargetType)
		require.JSONEq(t, fmt.Sprintf(`{"user_id":%q,"name":"ci","prefix":"pfx1"}`, u.ID), string(e.Change))
	})

	t.Run("CredentialFindsKeyAndUser", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{RequestsPerMinute: intp(60), MaxActiveJobs: intp(3)})
		k := b.addKey(t, u.ID, "pfx1", b.now)
		b.addKey(t, u.ID, "pfx2", b.now)

		c, err := b.st.Credential(b.ctx, "pfx1")
		require.NoError(t, err)
		require.Equal(t, *k, c.Key)
		require.Equal(t, []byte("hash of pfx1"), c.Hash)
		require.Equal(t, u.ID, c.User.ID)
		require.Equal(t, "bob", c.User.Name)
		require.Equal(t, store.RoleUser, c.User.Role)
		require.True(t, c.User.CreatedAt.Equal(u.CreatedAt))
		require.True(t, c.User.DisabledAt.IsZero())
		require.Equal(t, u.Limits, c.User.Limits)

		at := b.now.Add(time.Minute)
		_, err = b.st.UpdateUser(b.ctx, u.ID, at, func(u *store.User) error {
			u.DisabledAt = at
			return nil
		}, store.Audit{})
		require.NoError(t, err)
		_, err = b.st.RevokeKey(b.ctx, u.ID, k.ID, at, store.Audit{})
		require.NoError(t, err)
		c, err = b.st.Credential(b.ctx, "pfx1")
		require.NoError(t, err)
		require.True(t, c.User.DisabledAt.Equal(at), "authentication sees the user disabled")
		require.True(t, c.Key.RevokedAt.Equal(at), "and the key revoked")
	})

	t.Run("CredentialOfUnknownPrefixIsNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.st.Credential(b.ctx, "nope")
		require.ErrorIs(t, err, job.ErrNotFound)
	})

	t.Run("DuplicatePrefixIsConflict", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u, other := b.addUser(t, "bob", store.Limits{}), b.addUser(t, "carol", store.Limits{})
		b.addKey(t, u.ID, "pfx1", b.now)
		_, err := b.st.CreateKey(b.ctx, &store.Key{ID: job.NewID(), UserID: other.ID, Prefix: "pfx1", CreatedAt: b.now},
			[]byte("h"), 0, store.Audit{Actor: actor, Action: store.ActionKeyCreate})
		require.ErrorIs(t, err, job.ErrConflict)
		keys, err := b.st.ListKeys(b.ctx, other.ID)
		require.NoError(t, err)
		require.Empty(t, keys)
		require.Empty(t, b.auditLog(t, store.AuditFilter{}))
	})

	t.Run("ListsOldestFirstRevokedIncluded", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u, other := b.addUser(t, "bob", store.Limits{}), b.addUser(t, "carol", store.Limits{})
		second := b.addKey(t, u.ID, "pfx2", b.now.Add(time.Second))
		first := b.addKey(t, u.ID, "pfx1", b.now)
		third := b.addKey(t, u.ID, "pfx3", b.now.Add(2*time.Second))
		b.addKey(t, other.ID, "pfx4", b.now)
		revoked, err := b.st.RevokeKey(b.ctx, u.ID, second.ID, b.now.Add(time.Minute), store.Audit{})
		require.NoError(t, err)

		keys, err := b.st.ListKeys(b.ctx, u.ID)
		require.NoError(t, err)
		require.Equal(t, []*store.Key{first, revoked, third}, keys)

		keys, err = b.st.ListKeys(b.ctx, job.NewID())
		require.NoError(t, err)
		require.Empty(t, keys)
	})

	t.Run("RevokeIsScopedToOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u, other := b.addUser(t, "bob", store.Limits{}), b.addUser(t, "carol", store.Limits{})
		k, k2 := b.addKey(t, u.ID, "pfx1", b.now), b.addKey(t, u.ID, "pfx2", b.now)
		audit := store.Audit{Actor: actor, Action: store.ActionKeyRevoke}

		_, err := b.st.RevokeKey(b.ctx, other.ID, k.ID, b.now, audit)
		require.ErrorIs(t, err, job.ErrNotFound, "another owner's key is as if it did not exist")
		c, err := b.st.Credential(b.ctx, "pfx1")
		require.NoError(t, err)
		require.True(t, c.Key.RevokedAt.IsZero())
		require.Empty(t, b.auditLog(t, store.AuditFilter{}))

		got, err := b.st.RevokeKey(b.ctx, u.ID, k.ID, b.now, audit)
		require.NoError(t, err)
		require.True(t, got.RevokedAt.Equal(b.now))

		got, err = b.st.RevokeKey(b.ctx, store.AnyOwner, k2.ID, b.now, audit)
		require.NoError(t, err, "an administrator revokes anyone's key")
		require.True(t, got.RevokedAt.Equal(b.now))

		_, err = b.st.RevokeKey(b.ctx, store.AnyOwner, job.NewID(), b.now, audit)
		require.ErrorIs(t, err, job.ErrNotFound)

		e := b.onlyAudit(t, store.AuditFilter{Target: k.ID})
		require.Equal(t, store.ActionKeyRevoke, e.Action)
		require.Equal(t, store.TargetKey, e.TargetType)
		require.JSONEq(t, fmt.Sprintf(`{"user_id":%q,"prefix":"pfx1"}`, u.ID), string(e.Change))
	})

	t.Run("RevokingTwiceKeepsTheFirstRevocation", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		k := b.addKey(t, u.ID, "pfx1", b.now)
		audit := store.Audit{Actor: actor, Action: store.ActionKeyRevoke}

		_, err := b.st.RevokeKey(b.ctx, u.ID, k.ID, b.now, audit)
		require.NoError(t, err)
		got, err := b.st.RevokeKey(b.ctx, u.ID, k.ID, b.now.Add(time.Minute), audit)
		require.NoError(t, err)
		require.True(t, got.RevokedAt.Equal(b.now))
		require.Len(t, b.auditLog(t, store.AuditFilter{Target: k.ID, Action: store.ActionKeyRevoke}), 1)
	})

	// Two revocations at the same instant (two requests in the same
	// millisecond: the dashboard truncates its clock to milliseconds) record
	// one entry: whether a call revoked the key is read before its update.
	t.Run("RevokingTwiceAtTheSameInstantRecordsOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		k := b.addKey(t, u.ID, "pfx1", b.now)
		audit := store.Audit{Actor: actor, Action: store.ActionKeyRevoke}

		for range 2 {
			_, err := b.st.RevokeKey(b.ctx, u.ID, k.ID, b.now, audit)
			require.NoError(t, err)
		}
		require.Len(t, b.auditLog(t, store.AuditFilter{Target: k.ID, Action: store.ActionKeyRevoke}), 1,
			"a repeat at the same instant records nothing")
	})

	// A clock finer than Postgres' microseconds still records the revocation.
	t.Run("RevokeRecordsWithAFineClock", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		k := b.addKey(t, u.ID, "pfx1", b.now)
		now := b.now.Add(1234 * time.Nanosecond)

		got, err := b.st.RevokeKey(b.ctx, u.ID, k.ID, now, store.Audit{Actor: actor, Action: store.ActionKeyRevoke})
		require.NoError(t, err)
		require.False(t, got.RevokedAt.IsZero())
		require.Len(t, b.auditLog(t, store.AuditFilter{Target: k.ID, Action: store.ActionKeyRevoke}), 1,
			"the revocation is recorded")
	})

	t.Run("TouchWritesAtMostOncePerInterval", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		u := b.addUser(t, "bob", store.Limits{})
		k := b.addKey(t, u.ID, "pfx1", b.now)
		lastUsed := func() time.Time {
			c, err := b.st.Credential(b.ctx, k.Prefix)
			require.NoError(t, err)
			return c.Key.LastUsedAt
		}
		require.True(t, lastUsed().IsZero())

		for _, tt := range []struct {
			at, want time.Time
		}{
			{b.now, b.now},
			{b.now.Add(time.Second), b.now},
			{b.now.Add(store.KeyTouchInterval), b.now},
			{b.now.Add(store.KeyTouchInterval + time.Millisecond), b.now.Add(store.KeyTouchInterval + time.Millisecond)},
			{b.now.Add(store.KeyTouchInterval + time.Second), b.now.Add(store.KeyTouchInterval + time.Millisecond)},
		} {
			require.NoError(t, b.st.TouchKey(b.ctx, k.ID, tt.at))
			require.Equal(t, tt.want, lastUsed(), "touched at %s", tt.at)
		}
		require.NoError(t, b.st.TouchKey(b.ctx, job.NewID(), b.now), "an unknown key is no error")
	})
}

func TestCreateJobsQuota(t *testing.T) {
	t.Parallel()

	capped := func(max int) store.Create { return store.Create{MaxActive: max} }

	t.Run("RefusesPastTheCapAndStoresNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := b.now.Add(time.Hour)
		b.create(t, newJob(ownerA, at), newJob(ownerA, at))

		err := b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at), newJob(ownerA, at)}, capped(3))
		var quota *store.QuotaError
		require.ErrorAs(t, err, &quota)
		require.Equal(t, store.QuotaError{Active: 2, Adding: 2, Max: 3}, *quota)
		require.Equal(t, 2, b.jobCount(t, ownerA), "a refused batch stores none of its jobs")

		require.NoError(t, b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at)}, capped(3)))
		require.Equal(t, 3, b.jobCount(t, ownerA))

		err = b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at)}, capped(3))
		require.ErrorAs(t, err, &quota)
		require.Equal(t, store.QuotaError{Active: 3, Adding: 1, Max: 3}, *quota)
		require.Equal(t, 3, b.jobCount(t, ownerA))
	})

	t.Run("CountsNoFurtherThanTheCap", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := b.now.Add(time.Hour)
		b.create(t, newJob(ownerA, at), newJob(ownerA, at), newJob(ownerA, at), newJob(ownerA, at))

		// The cap was lowered below what the owner holds: the count stops
		// at the cap, and the error says so.
		err := b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at)}, capped(2))
		var quota *store.QuotaError
		require.ErrorAs(t, err, &quota)
		require.Equal(t, store.QuotaError{Active: 2, Adding: 1, Max: 2}, *quota)
		require.Equal(t, "at least 2 active jobs and 1 more would pass the cap of 2", quota.Error())
		require.Equal(t, 4, b.jobCount(t, ownerA))
	})

	t.Run("CountsOnlyJobsThatCanStillRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := b.now.Add(time.Hour)
		ended := func(s job.Status) func(*job.Job) {
			return func(j *job.Job) { j.Status, j.DueAt = s, time.Time{} }
		}
		b.create(t,
			newJob(ownerA, at), newJob(ownerA, at, ended(job.StatusPaused)),
			newJob(ownerA, at, ended(job.StatusCompleted)), newJob(ownerA, at, ended(job.StatusCancelled)),
			newJob(ownerA, at, ended(job.StatusPermanentlyFailed)),
			newJob(ownerB, at), newJob(ownerB, at), newJob(ownerB, at))

		require.NoError(t, b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at)}, capped(3)),
			"finished jobs and other owners' do not count")
		err := b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at)}, capped(3))
		var quota *store.QuotaError
		require.ErrorAs(t, err, &quota, "paused jobs count: they can be resumed")
		require.Equal(t, 3, quota.Active)
	})

	t.Run("ZeroMeansNoCap", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := b.now.Add(time.Hour)
		b.create(t, newJob(ownerA, at), newJob(ownerA, at), newJob(ownerA, at))
		require.NoError(t, b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at), newJob(ownerB, at)}, capped(0)))
		require.Equal(t, 4, b.jobCount(t, ownerA))
	})

	t.Run("CappedBatchOfMixedOwnersIsInvalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := b.now.Add(time.Hour)
		err := b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at), newJob(ownerB, at)},
			store.Create{MaxActive: 10, Audit: store.Audit{Actor: actor, Action: store.ActionJobCreate}})
		require.ErrorIs(t, err, job.ErrInvalid)
		require.Zero(t, b.jobCount(t, ownerA))
		require.Zero(t, b.jobCount(t, ownerB))
		require.Empty(t, b.auditLog(t, store.AuditFilter{}))
	})

	t.Run("RefusalRecordsNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := b.now.Add(time.Hour)
		err := b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at), newJob(ownerA, at)},
			store.Create{MaxActive: 1, Audit: store.Audit{Actor: actor, Action: store.ActionJobCreate}})
		var quota *store.QuotaError
		require.ErrorAs(t, err, &quota)
		require.Empty(t, b.auditLog(t, store.AuditFilter{}))
	})

	t.Run("ConcurrentCreatorsCannotPassTogether", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		const max, creators = 5, 24
		at := b.now.Add(time.Hour)
		b.create(t, newJob(ownerA, at))

		errs := make([]error, creators)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range creators {
			wg.Go(func() {
				<-start
				errs[i] = b.st.CreateJobs(b.ctx, []*job.Job{newJob(ownerA, at)}, capped(max))
			})
		}
		close(start)
		wg.Wait()

		passed := 0
		for _, err := range errs {
			var quota *store.QuotaError
			switch {
			case err == nil:
				passed++
			case errors.As(err, &quota):
				require.Equal(t, store.QuotaError{Active: max, Adding: 1, Max: max}, *quota)
			default:
				require.NoError(t, err)
			}
		}
		require.Equal(t, max-1, passed, "exactly the room left under the cap")
		require.Equal(t, max, b.jobCount(t, ownerA))
	})
}

func TestAudit(t *testing.T) {
	t.Parallel()

	const secret = "s3cr3t"
	// withSecret makes a job a webhook whose payload holds a credential.
	withSecret := func(j *job.Job) {
		j.Type = jobtype.TypeWebhook
		j.Payload = json.RawMessage(`{"url":"https://example.com/hook","headers":{"Authorization":"Bearer ` + secret + `"}}`)
	}
	create := store.Audit{Actor: actor, Action: store.ActionJobCreate}

	// requireCreated checks the job.create entry of j.
	requireCreated := func(t *testing.T, e store.AuditEntry, j *job.Job) {
		t.Helper()
		require.Equal(t, actor, e.Actor)
		require.Equal(t, store.ActionJobCreate, e.Action)
		require.Equal(t, store.TargetJob, e.TargetType)
		require.Equal(t, j.ID, e.TargetID)
		require.True(t, e.At.Equal(j.CreatedAt))
		require.NotContains(t, string(e.Change), secret, "a payload may hold credentials")
		var change map[string]any
		require.NoError(t, json.Unmarshal(e.Change, &change))
		require.NotContains(t, change, "payload")
		require.Equal(t, j.Name, change["name"])
		require.Equal(t, string(j.Type), change["type"])
		require.Equal(t, j.Owner.String(), change["owner"])
		require.EqualValues(t, j.Priority, change["priority"])
		require.EqualValues(t, j.MaxRetries, change["max_retries"])
		require.Equal(t, j.Timeout.String(), change["timeout"])
		if j.Recurring() {
			require.NotNil(t, change["schedule"])
			require.NotContains(t, change, "run_at")
		} else {
			require.Equal(t, j.RunAt.Format(jobspec.TimeFormat), change["run_at"])
			require.NotContains(t, change, "schedule")
		}
	}

	t.Run("RecordsASingleCreatedJob", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour), withSecret)
		require.NoError(t, b.st.CreateJobs(b.ctx, []*job.Job{j}, store.Create{Audit: create}))
		requireCreated(t, b.onlyAudit(t, store.AuditFilter{}), j)
	})

	t.Run("RecordsABatchOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := b.now.Add(time.Hour)
		jobs := []*job.Job{newJob(ownerA, at, withSecret), newJob(ownerA, at, withSecret, recurring(t, at)), newJob(ownerA, at)}
		require.NoError(t, b.st.CreateJobs(b.ctx, jobs, store.Create{Audit: create, MaxActive: 10}))

		got := b.auditLog(t, store.AuditFilter{})
		require.Len(t, got, 1, "one entry for the request, not one per job")
		e := got[0]
		require.Equal(t, store.ActionJobCreateBatch, e.Action)
		require.Equal(t, store.TargetBatch, e.TargetType)
		require.Equal(t, create.Actor, e.Actor)
		var change struct {
			Count int         `json:"count"`
			IDs   []uuid.UUID `json:"ids"`
		}
		require.NoError(t, json.Unmarshal(e.Change, &change))
		require.Equal(t, 3, change.Count)
		require.Equal(t, []uuid.UUID{jobs[0].ID, jobs[1].ID, jobs[2].ID}, change.IDs)
		require.NotContains(t, string(e.Change), "secret", "no payload in the entry")
	})

	t.Run("ZeroAuditRecordsNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		at := b.now.Add(time.Hour)
		b.create(t, newJob(ownerA, at))
		b.create(t, newJob(ownerA, at), newJob(ownerA, at))
		require.Equal(t, 3, b.jobCount(t, ownerA))
		require.Empty(t, b.auditLog(t, store.AuditFilter{}))
	})

	t.Run("UpdateRecordsChangedFieldsOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour), withSecret, func(j *job.Job) { j.Name = "before" })
		b.create(t, j)
		at := b.now.Add(time.Minute)

		_, after, err := b.st.UpdateJob(b.ctx, ownerA, j.ID, at, func(j *job.Job, started bool) error {
			require.False(t, started)
			j.Name, j.Priority = "after", 5
			j.Payload = json.RawMessage(`{"url":"https://example.com/hook","headers":{"Authorization":"Bearer n3w` + secret + `"}}`)
			return nil
		}, store.Update{Audit: store.Audit{Actor: actor, Action: store.ActionJobUpdate}})
		require.NoError(t, err)
		require.Equal(t, "after", after.Name)

		e := b.onlyAudit(t, store.AuditFilter{Target: j.ID})
		require.Equal(t, store.ActionJobUpdate, e.Action)
		require.Equal(t, store.TargetJob, e.TargetType)
		require.Equal(t, actor, e.Actor)
		require.True(t, e.At.Equal(at))
		require.NotContains(t, string(e.Change), secret)
		require.JSONEq(t, `{
			"name": {"from": "before", "to": "after"},
			"priority": {"from": 0, "to": 5},
			"payload": "changed"
		}`, string(e.Change))
	})

	t.Run("UpdateKeepingThePayloadDoesNotRecordIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour), withSecret)
		b.create(t, j)
		runAt := j.RunAt.Add(time.Hour)

		_, _, err := b.st.UpdateJob(b.ctx, ownerA, j.ID, b.now, func(j *job.Job, _ bool) error {
			// The same payload, written differently: jsonb stores it the same.
			j.Payload = json.RawMessage(`{ "headers": {"Authorization": "Bearer ` + secret + `"}, "url": "https://example.com/hook" }`)
			j.RunAt, j.DueAt = runAt, runAt
			return nil
		}, store.Update{Audit: store.Audit{Actor: actor, Action: store.ActionJobUpdate}})
		require.NoError(t, err)

		e := b.onlyAudit(t, store.AuditFilter{Target: j.ID})
		require.JSONEq(t, fmt.Sprintf(`{"run_at": {"from": %q, "to": %q}}`,
			j.RunAt.Format(jobspec.TimeFormat), runAt.Format(jobspec.TimeFormat)), string(e.Change))
	})

	t.Run("RefusedUpdateRecordsNothing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour))
		b.create(t, j)
		_, _, err := b.st.UpdateJob(b.ctx, ownerA, j.ID, b.now, func(j *job.Job, _ bool) error {
			j.Name = "after"
			return fmt.Errorf("%w: no", job.ErrConflict)
		}, store.Update{Audit: store.Audit{Actor: actor, Action: store.ActionJobUpdate}})
		require.ErrorIs(t, err, job.ErrConflict)
		require.Equal(t, j.Name, b.job(t, j.ID).Name)
		require.Empty(t, b.auditLog(t, store.AuditFilter{}))
	})

	t.Run("CancelRecordsStatus", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour))
		b.create(t, j)
		cancel := store.Audit{Actor: actor, Action: store.ActionJobCancel}

		_, _, err := b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, cancel, nil)
		require.NoError(t, err)
		_, _, err = b.st.CancelJob(b.ctx, ownerA, j.ID, b.now, cancel, nil)
		require.ErrorIs(t, err, job.ErrConflict)

		e := b.onlyAudit(t, store.AuditFilter{Target: j.ID})
		require.Equal(t, store.ActionJobCancel, e.Action)
		require.Equal(t, store.TargetJob, e.TargetType)
		require.True(t, e.At.Equal(b.now))
		require.JSONEq(t, `{"status": {"from": "scheduled", "to": "cancelled"}}`, string(e.Change), "a refused cancel records nothing")
	})

	t.Run("RecordAuditWritesAnEntry", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		target := job.NewID()
		require.NoError(t, b.st.RecordAudit(b.ctx, store.AuditEntry{At: b.now, Actor: actor, Action: store.ActionJobTrigger,
			TargetType: store.TargetJob, TargetID: target}))
		require.NoError(t, b.st.RecordAudit(b.ctx, store.AuditEntry{At: b.now, Actor: actor, Action: store.ActionJobTrigger,
			TargetType: store.TargetJob, TargetID: target, Change: json.RawMessage(`{"at": "now"}`)}))

		got := b.auditLog(t, store.AuditFilter{})
		require.Len(t, got, 2)
		require.Greater(t, got[0].ID, got[1].ID, "newest first")
		for _, e := range got {
			require.Equal(t, actor, e.Actor)
			require.Equal(t, store.ActionJobTrigger, e.Action)
			require.Equal(t, store.TargetJob, e.TargetType)
			require.Equal(t, target, e.TargetID)
			require.True(t, e.At.Equal(b.now))
		}
		require.JSONEq(t, `{"at": "now"}`, string(got[0].Change))
		require.JSONEq(t, `{}`, string(got[1].Change), "no change is an empty object")

		err := b.st.RecordAudit(b.ctx, store.AuditEntry{At: b.now, Actor: actor, Action: "x", TargetType: "run", TargetID: target})
		require.Error(t, err, "an unknown target type is refused")
	})

	t.Run("ListFiltersAndPages", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		other := job.NewID()
		t1, t2 := job.NewID(), job.NewID()
		type entry struct {
			actor  uuid.UUID
			action string
			target uuid.UUID
			at     time.Duration
		}
		// Entries in id order; their times are not: the log is ordered by id.
		entries := []entry{
			{actor, store.ActionJobCreate, t1, 0},
			{actor, store.ActionJobUpdate, t1, time.Minute},
			{other, store.ActionJobCreate, t2, 2 * time.Minute},
			{other, store.ActionJobCancel, t2, 3 * time.Minute},
			{actor, store.ActionJobCancel, t1, 4 * time.Minute},
			{other, store.ActionJobUpdate, t1, time.Minute},
		}
		for _, e := range entries {
			require.NoError(t, b.st.RecordAudit(b.ctx, store.AuditEntry{At: b.now.Add(e.at), Actor: e.actor, Action: e.action,
				TargetType: store.TargetJob, TargetID: e.target}))
		}
		all := b.auditLog(t, store.AuditFilter{})
		require.Len(t, all, len(entries))
		// idx maps entry indexes to the ids ListAudit gives them, newest first.
		idx := func(is ...int) []int64 {
			out := []int64{}
			for k := len(is) - 1; k >= 0; k-- {
				out = append(out, all[len(entries)-1-is[k]].ID)
			}
			return out
		}
		for i, e := range entries {
			got := all[len(entries)-1-i]
			require.Equal(t, e.action, got.Action)
			require.Equal(t, e.target, got.TargetID)
		}

		for _, tt := range []struct {
			name   string
			filter store.AuditFilter
			want   []int
		}{
			{"Everything", store.AuditFilter{}, []int{0, 1, 2, 3, 4, 5}},
			{"Actor", store.AuditFilter{Actor: other}, []int{2, 3, 5}},
			{"Target", store.AuditFilter{Target: t1}, []int{0, 1, 4, 5}},
			{"Action", store.AuditFilter{Action: store.ActionJobCancel}, []int{3, 4}},
			{"ActorTargetAndAction", store.AuditFilter{Actor: other, Target: t1, Action: store.ActionJobUpdate}, []int{5}},
			{"SinceIsInclusive", store.AuditFilter{Since: b.now.Add(2 * time.Minute)}, []int{2, 3, 4}},
			{"UntilIsExclusive", store.AuditFilter{Until: b.now.Add(time.Minute)}, []int{0}},
			{"SinceAndUntil", store.AuditFilter{Since: b.now.Add(time.Minute), Until: b.now.Add(3 * time.Minute)}, []int{1, 2, 5}},
			{"NoMatch", store.AuditFilter{Actor: other, Action: store.ActionJobCreate, Target: t1}, nil},
			{"Limit", store.AuditFilter{Limit: 2}, []int{4, 5}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				got := b.auditLog(t, tt.filter)
				ids := []int64{}
				for _, e := range got {
					ids = append(ids, e.ID)
				}
				require.Equal(t, idx(tt.want...), ids)
			})
		}

		t.Run("PagesWithBefore", func(t *testing.T) {
			t.Parallel()
			var pages [][]int64
			f := store.AuditFilter{Target: t1, Limit: 3}
			for {
				page := b.auditLog(t, f)
				if len(page) == 0 {
					break
				}
				ids := make([]int64, len(page))
				for i, e := range page {
					ids[i] = e.ID
				}
				pages = append(pages, ids)
				f.Before = ids[len(ids)-1]
			}
			require.Equal(t, [][]int64{idx(1, 4, 5), idx(0)}, pages)
		})
	})

	// audit_log.id is a bigint, and so is the cursor: one past 2^31-1 works.
	t.Run("PagesFromABigintCursor", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		require.NoError(t, b.st.RecordAudit(b.ctx, store.AuditEntry{At: b.now, Actor: actor, Action: store.ActionJobTrigger,
			TargetType: store.TargetJob, TargetID: job.NewID()}))
		got, err := b.st.ListAudit(b.ctx, store.AuditFilter{Before: 1 << 40, Limit: 10})
		require.NoError(t, err)
		require.Len(t, got, 1)
	})
}

func TestLastRun(t *testing.T) {
	t.Parallel()

	// lastRun returns the LastRun GetJob and ListJobs give for j, after
	// checking that they agree.
	lastRun := func(t *testing.T, b *bundle, j *job.Job) *job.Run {
		t.Helper()
		got, err := b.st.GetJob(b.ctx, j.Owner, j.ID)
		require.NoError(t, err)
		listed, err := b.st.ListJobs(b.ctx, store.JobFilter{Owner: j.Owner, Limit: 100})
		require.NoError(t, err)
		for _, l := range listed {
			if l.ID == j.ID {
				require.Equal(t, got.LastRun, l.LastRun, "GetJob and ListJobs agree")
				return got.LastRun
			}
		}
		t.Fatalf("ListJobs did not list %s", j.ID)
		return nil
	}
	// ended is the outcome of attempt o: status, with error text errText.
	ended := func(t *testing.T, b *bundle, o job.Occurrence, s job.RunStatus, errText string) store.Result {
		t.Helper()
		res := b.outcome(t, o, s)
		res.Error = errText
		return res
	}

	t.Run("NilForAJobThatNeverRan", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now.Add(time.Hour))
		b.create(t, j)
		require.Nil(t, lastRun(t, b, j))
	})

	t.Run("IsTheLatestAttempt", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		j := newJob(ownerA, b.now)
		first := b.claimed(t, j)[0]
		earlier := job.Occurrence{JobID: j.ID, ScheduledFor: b.now.Add(-time.Hour), Attempt: 3, Owner: ownerA}
		b.finish(t, ended(t, b, earlier, job.RunFailed, "HTTP 500"), ended(t, b, first, job.RunFailed, "HTTP 503"))

		got := lastRun(t, b, j)
		require.NotNil(t, got)
		require.Equal(t, &job.Run{JobID: j.ID, Owner: ownerA, Status: job.RunFailed, Attempt: 1, ScheduledFor: j.RunAt,
			DueAt: j.RunAt, StartedAt: b.now, FinishedAt: b.now.Add(time.Second), Error: "HTTP 503"}, got,
			"the latest occurrence wins over a higher attempt of an earlier one")

		retry := first.Next()
		b.finish(t, ended(t, b, retry, job.RunCompleted, ""))
		got = lastRun(t, b, j)
		require.Equal(t, job.RunCompleted, got.Status)
		require.Equal(t, 2, got.Attempt, "then the latest attempt of it")
		require.Empty(t, got.Error)
		require.Equal(t, job.StatusCompleted, b.job(t, j.ID).Status)
	})

	t.Run("EachJobGetsItsOwn", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ran, failed, idle := newJob(ownerA, b.now), newJob(ownerA, b.now), newJob(ownerA, b.now.Add(2*time.Hour))
		b.claimed(t, ran, failed)
		b.create(t, idle)
		b.finish(t, ended(t, b, firstAttempt(ran), job.RunCompleted, ""))
		b.finish(t, ended(t, b, firstAttempt(failed), job.RunPermanentlyFailed, "HTTP 404"))

		listed, err := b.st.ListJobs(b.ctx, store.JobFilter{Owner: ownerA, Limit: 100})
		require.NoError(t, err)
		require.Len(t, listed, 3)
		byID := map[uuid.UUID]*job.Job{}
		for _, j := range listed {
			byID[j.ID] = j
		}
		require.Equal(t, ran.ID, byID[ran.ID].LastRun.JobID)
		require.Equal(t, job.RunCompleted, byID[ran.ID].LastRun.Status)
		require.Equal(t, failed.ID, byID[failed.ID].LastRun.JobID)
		require.Equal(t, job.RunPermanentlyFailed, byID[failed.ID].LastRun.Status)
		require.Equal(t, "HTTP 404", byID[failed.ID].LastRun.Error)
		require.Nil(t, byID[idle.ID].LastRun)
	})
}

// TestKeyScopesExpiryAndCap stores a key's scopes and expiry, counts only
// live keys (neither revoked nor expired) against the cap, and lets no two
// concurrent creations pass it together.
func TestKeyScopesExpiryAndCap(t *testing.T) {
	t.Parallel()
	b := setup(t)
	u := b.addUser(t, "dana", store.Limits{})
	mk := func(prefix string, scopes []string, expires time.Time) (*store.Key, error) {
		return b.st.CreateKey(b.ctx, &store.Key{ID: job.NewID(), UserID: u.ID, Prefix: prefix, CreatedAt: b.now,
			Scopes: scopes, ExpiresAt: expires}, []byte("h"+prefix), 3, store.Audit{Actor: u.ID, Action: store.ActionKeyCreate})
	}
	ro, err := mk("p1", []string{"jobs:read", "runs:read"}, b.now.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{"jobs:read", "runs:read"}, ro.Scopes)
	require.Equal(t, b.now.Add(time.Hour), ro.ExpiresAt)
	all, err := mk("p2", nil, time.Time{})
	require.NoError(t, err)
	require.Nil(t, all.Scopes, "no scopes: everything the role allows")
	require.True(t, all.ExpiresAt.IsZero())
	cred, err := b.st.Credential(b.ctx, "p1")
	require.NoError(t, err)
	require.Equal(t, ro.Scopes, cred.Key.Scopes)
	require.True(t, cred.Key.Live(b.now))
	require.False(t, cred.Key.Live(b.now.Add(time.Hour)), "expired at its expires_at")

	_, err = mk("p3", nil, b.now.Add(-time.Second)) // already expired: live no more, not counted
	require.NoError(t, err)
	_, err = mk("p4", nil, time.Time{})
	require.NoError(t, err)
	_, err = mk("p5", nil, time.Time{})
	require.ErrorIs(t, err, store.ErrTooManyKeys)
	require.ErrorIs(t, err, job.ErrConflict)

	_, err = b.st.RevokeKey(b.ctx, u.ID, all.ID, b.now, store.Audit{Actor: u.ID, Action: store.ActionKeyRevoke})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = mk(fmt.Sprintf("c%d", i), nil, time.Time{})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			require.ErrorIs(t, err, store.ErrTooManyKeys)
		}
	}
	require.Equal(t, 1, ok, "one place was free, and only one creation took it")
}
