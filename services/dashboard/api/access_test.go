package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// person is a user the test created, with a live key.
type person struct {
	id  uuid.UUID
	key string
}

// auth is the Authorization header of the person's key.
func (p person) auth() string { return "Bearer " + p.key }

// user creates a user with the given role and limits, and a key for them.
func (b *bundle) user(t *testing.T, name, role string, limits map[string]any) person {
	t.Helper()
	body := map[string]any{"name": name, "role": role}
	if limits != nil {
		body["limits"] = limits
	}
	rec := b.do(t, http.MethodPost, "/api/v1/users", body)
	require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
	u := decode[api.User](t, rec)
	rec = b.do(t, http.MethodPost, "/api/v1/users/"+u.ID.String()+"/keys", map[string]any{"name": "test"})
	require.Equal(t, http.StatusCreated, rec.Code, "body: %s", rec.Body.String())
	k := decode[api.Key](t, rec)
	require.NotEmpty(t, k.Key)
	return person{id: u.ID, key: k.Key}
}

// as sends a request with a person's key.
func (b *bundle) as(t *testing.T, p person, method, path string, body any) *httptest.ResponseRecorder {
	t.Helper()
	return b.request(t, method, path, body, p.auth())
}

func TestKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("KeyIsShownOnceAndStoredHashed", func(t *testing.T) {
		t.Parallel()
		u := decode[api.User](t, b.do(t, http.MethodPost, "/api/v1/users", map[string]any{"name": "ann", "role": "user"}))
		rec := b.do(t, http.MethodPost, "/api/v1/users/"+u.ID.String()+"/keys", nil)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		require.Equal(t, "no-store", rec.Header().Get("Cache-Control"))
		k := decode[api.Key](t, rec)
		require.True(t, strings.HasPrefix(k.Key, "tock_"+k.Prefix+"_"), k.Key)
		require.Equal(t, u.ID, k.UserID)

		list := decode[api.KeyList](t, b.do(t, http.MethodGet, "/api/v1/users/"+u.ID.String()+"/keys", nil))
		require.Len(t, list.Keys, 1)
		require.Empty(t, list.Keys[0].Key, "the key is never shown again")
		require.Equal(t, k.Prefix, list.Keys[0].Prefix)

		var stored []byte
		require.NoError(t, b.store.Pool().QueryRow(t.Context(), `SELECT hash FROM api_keys WHERE id = $1`, k.ID).Scan(&stored))
		require.Len(t, stored, 32, "a SHA-256")
		require.NotContains(t, string(stored), k.Key)
	})

	t.Run("ValidKeyActsAsItsUser", func(t *testing.T) {
		t.Parallel()
		p := b.user(t, "bob", "user", nil)
		rec := b.as(t, p, http.MethodGet, "/api/v1/me", nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		me := decode[api.User](t, rec)
		require.Equal(t, p.id, me.ID)
		require.Equal(t, "user", me.Role)

		keys := decode[api.KeyList](t, b.as(t, p, http.MethodGet, "/api/v1/users/"+p.id.String()+"/keys", nil))
		require.False(t, keys.Keys[0].LastUsedAt.IsZero(), "last use is recorded")
	})

	t.Run("WrongOrRevokedKeyIs401", func(t *testing.T) {
		t.Parallel()
		p := b.user(t, "carl", "user", nil)
		prefix, _, _ := strings.Cut(strings.TrimPrefix(p.key, "tock_"), "_")
		for _, bad := range []string{
			p.key + "x",
			p.key[:len(p.key)-1] + other(p.key[len(p.key)-1:]),
			"tock_" + prefix + "_",
			"tock_aaaaaaaaaaaaa_" + strings.Repeat("A", 43),
			"tock_short_secret",
		} {
			rec := b.request(t, http.MethodGet, "/api/v1/jobs", nil, "Bearer "+bad)
			requireError(t, rec, http.StatusUnauthorized, apierr.CodeUnauthorized)
		}
		require.Equal(t, http.StatusOK, b.as(t, p, http.MethodGet, "/api/v1/jobs", nil).Code)

		keys := decode[api.KeyList](t, b.do(t, http.MethodGet, "/api/v1/users/"+p.id.String()+"/keys", nil))
		rec := b.do(t, http.MethodDelete, "/api/v1/keys/"+keys.Keys[0].ID.String(), nil)
		require.Equal(t, http.StatusNoContent, rec.Code, rec.Body.String())
		requireError(t, b.as(t, p, http.MethodGet, "/api/v1/jobs", nil), http.StatusUnauthorized, apierr.CodeUnauthorized)

		keys = decode[api.KeyList](t, b.do(t, http.MethodGet, "/api/v1/users/"+p.id.String()+"/keys", nil))
		require.False(t, keys.Keys[0].RevokedAt.IsZero())
	})

	t.Run("UserManagesOnlyTheirOwnKeys", func(t *testing.T) {
		t.Parallel()
		p := b.user(t, "dora", "user", nil)
		other := b.user(t, "ed", "user", nil)

		rec := b.as(t, p, http.MethodPost, "/api/v1/users/"+p.id.String()+"/keys", map[string]any{"name": "ci"})
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		second := decode[api.Key](t, rec)

		requireError(t, b.as(t, p, http.MethodPost, "/api/v1/users/"+other.id.String()+"/keys", nil), http.StatusForbidden, apierr.CodeForbidden)
		requireError(t, b.as(t, p, http.MethodGet, "/api/v1/users/"+other.id.String()+"/keys", nil), http.StatusForbidden, apierr.CodeForbidden)
		otherKeys := decode[api.KeyList](t, b.do(t, http.MethodGet, "/api/v1/users/"+other.id.String()+"/keys", nil))
		requireError(t, b.as(t, p, http.MethodDelete, "/api/v1/keys/"+otherKeys.Keys[0].ID.String(), nil), http.StatusNotFound, apierr.CodeNotFound)
		require.Equal(t, http.StatusOK, b.as(t, other, http.MethodGet, "/api/v1/me", nil).Code, "the other key still works")

		require.Equal(t, http.StatusNoContent, b.as(t, p, http.MethodDelete, "/api/v1/keys/"+second.ID.String(), nil).Code)
		require.Equal(t, http.StatusOK, b.as(t, p, http.MethodGet, "/api/v1/me", nil).Code, "the first key still works")
	})

	t.Run("UnknownKeyOrUserIs404", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.do(t, http.MethodDelete, "/api/v1/keys/"+uuid.NewString(), nil), http.StatusNotFound, apierr.CodeNotFound)
		requireError(t, b.do(t, http.MethodDelete, "/api/v1/keys/not-a-uuid", nil), http.StatusNotFound, apierr.CodeNotFound)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/users/"+uuid.NewString()+"/keys", nil), http.StatusNotFound, apierr.CodeNotFound)
		requireError(t, b.do(t, http.MethodGet, "/api/v1/users/"+uuid.NewString()+"/keys", nil), http.StatusNotFound, apierr.CodeNotFound)
	})
}

func TestUsers(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("CreateValidates", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			body  any
			field string
		}{
			{map[string]any{"role": "user"}, "name"},
			{map[string]any{"name": "  ", "role": "user"}, "name"},
			{map[string]any{"name": strings.Repeat("n", 201), "role": "user"}, "name"},
			{map[string]any{"name": "x"}, "role"},
			{map[string]any{"name": "x", "role": "root"}, "role"},
			{map[string]any{"name": "x", "role": "user", "email": "x@example.com"}, "email"},
			{map[string]any{"name": "x", "role": "user", "limits": map[string]any{"requests_per_minute": 0}}, "limits.requests_per_minute"},
			{map[string]any{"name": "x", "role": "user", "limits": map[string]any{"max_active_jobs": -1}}, "limits.max_active_jobs"},
			{map[string]any{"name": "x", "role": "user", "limits": map[string]any{"burst": 3}}, "limits.burst"},
			{map[string]any{"name": 3, "role": "user"}, "name"},
		}
		for _, tc := range cases {
			rec := b.do(t, http.MethodPost, "/api/v1/users", tc.body)
			d := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
			require.Equal(t, tc.field, d.Field, "body %v: %s", tc.body, d.Message)
		}
	})

	t.Run("LimitsOverrideTheGlobalOnes", func(t *testing.T) {
		t.Parallel()
		rec := b.do(t, http.MethodPost, "/api/v1/users", map[string]any{"name": "fay", "role": "user",
			"limits": map[string]any{"requests_per_minute": 60, "max_active_jobs": 5}})
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		u := decode[api.User](t, rec)
		require.Equal(t, 60, *u.Limits.RequestsPerMinute)
		require.Nil(t, u.Limits.JobsPerMinute)
		require.Equal(t, 60, u.EffectiveLimits.RequestsPerMinute)
		require.Equal(t, api.DefaultQuotas.RequestBurst, u.EffectiveLimits.RequestBurst)
		require.Equal(t, api.DefaultQuotas.JobsPerMinute, u.EffectiveLimits.JobsPerMinute)
		require.Equal(t, 5, u.EffectiveLimits.MaxActiveJobs)

		rec = b.do(t, http.MethodPatch, "/api/v1/users/"+u.ID.String(), map[string]any{"name": "fay b", "limits": map[string]any{}})
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		u = decode[api.User](t, rec)
		require.Equal(t, "fay b", u.Name)
		require.Nil(t, u.Limits.RequestsPerMinute)
		require.Equal(t, api.DefaultQuotas.MaxActiveJobs, u.EffectiveLimits.MaxActiveJobs)
	})

	t.Run("ListPagesOldestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for i := range 3 {
			b.user(t, "u"+strconv.Itoa(i), "user", nil)
		}
		first := decode[api.UserList](t, b.do(t, http.MethodGet, "/api/v1/users?limit=2", nil))
		require.Len(t, first.Users, 2)
		require.Equal(t, store.BootstrapAdmin, first.Users[0].ID)
		require.Equal(t, "admin", first.Users[0].Role)
		require.NotEmpty(t, first.NextCursor)
		second := decode[api.UserList](t, b.do(t, http.MethodGet, "/api/v1/users?limit=2&cursor="+first.NextCursor, nil))
		require.Len(t, second.Users, 2)
		require.Empty(t, second.NextCursor)
		require.Equal(t, []string{"u1", "u2"}, []string{second.Users[0].Name, second.Users[1].Name})
	})

	t.Run("DisablingStopsKeysAndPausesJobs", func(t *testing.T) {
		t.Parallel()
		p := b.user(t, "gus", "user", nil)
		rec := b.as(t, p, http.MethodPost, "/api/v1/jobs", spec("gus job", b.now.Add(time.Hour)))
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		j := decode[api.Job](t, rec)

		rec = b.do(t, http.MethodPost, "/api/v1/users/"+p.id.String()+"/disable", nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.False(t, decode[api.User](t, rec).DisabledAt.IsZero())
		requireError(t, b.as(t, p, http.MethodGet, "/api/v1/me", nil), http.StatusUnauthorized, apierr.CodeUnauthorized)
		got := decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil))
		require.Equal(t, job.StatusPaused, got.Status)
		require.Equal(t, store.PausedOwnerDisabled, got.PausedReason)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/users/"+p.id.String()+"/disable", nil), http.StatusConflict, apierr.CodeConflict)

		rec = b.do(t, http.MethodPost, "/api/v1/users/"+p.id.String()+"/enable", nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		require.True(t, decode[api.User](t, rec).DisabledAt.IsZero())
		require.Equal(t, http.StatusOK, b.as(t, p, http.MethodGet, "/api/v1/me", nil).Code)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/users/"+p.id.String()+"/enable", nil), http.StatusConflict, apierr.CodeConflict)
	})

	t.Run("BootstrapAdminCannotBeDisabled", func(t *testing.T) {
		t.Parallel()
		requireError(t, b.do(t, http.MethodPost, "/api/v1/users/"+store.BootstrapAdmin.String()+"/disable", nil), http.StatusConflict, apierr.CodeConflict)
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/api/v1/me", nil).Code)
	})

	t.Run("UserCallingAdminRouteIs403", func(t *testing.T) {
		t.Parallel()
		p := b.user(t, "hal", "user", nil)
		other := b.user(t, "ida", "user", nil)
		for _, r := range []struct{ method, path string }{
			{http.MethodPost, "/api/v1/users"},
			{http.MethodGet, "/api/v1/users"},
			{http.MethodGet, "/api/v1/users/" + other.id.String()},
			{http.MethodPatch, "/api/v1/users/" + p.id.String()},
			{http.MethodPost, "/api/v1/users/" + other.id.String() + "/disable"},
			{http.MethodPost, "/api/v1/users/" + p.id.String() + "/enable"},
			{http.MethodGet, "/api/v1/users/" + other.id.String() + "/jobs"},
			{http.MethodGet, "/api/v1/audit"},
		} {
			rec := b.as(t, p, r.method, r.path, map[string]any{"name": "x", "role": "admin"})
			requireError(t, rec, http.StatusForbidden, apierr.CodeForbidden)
		}
		require.Equal(t, http.StatusOK, b.as(t, p, http.MethodGet, "/api/v1/users/"+p.id.String(), nil).Code)
	})

	t.Run("AdminKeyIsAdmin", func(t *testing.T) {
		t.Parallel()
		p := b.user(t, "root", "admin", nil)
		require.Equal(t, http.StatusOK, b.as(t, p, http.MethodGet, "/api/v1/users", nil).Code)
		require.Equal(t, http.StatusOK, b.as(t, p, http.MethodGet, "/api/v1/audit", nil).Code)
	})
}

func TestOwnership(t *testing.T) {
	t.Parallel()
	b := setup(t)
	alice := b.user(t, "alice", "user", nil)
	bob := b.user(t, "bob", "user", nil)

	rec := b.as(t, alice, http.MethodPost, "/api/v1/jobs", spec("alice job", b.now.Add(time.Hour)))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	aj := decode[api.Job](t, rec)
	require.Equal(t, alice.id, aj.Owner)
	rec = b.as(t, alice, http.MethodPost, "/api/v1/jobs", recurring("alice cron", map[string]any{"cron": "0 9 * * *"}))
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	ac := decode[api.Job](t, rec)

	t.Run("AnotherUsersJobIs404", func(t *testing.T) {
		t.Parallel()
		for _, j := range []api.Job{aj, ac} {
			for _, r := range []struct {
				method, suffix string
				body           any
			}{
				{http.MethodGet, "", nil},
				{http.MethodPatch, "", map[string]any{"name": "stolen"}},
				{http.MethodDelete, "", nil},
				{http.MethodPost, "/pause", nil},
				{http.MethodPost, "/resume", nil},
				{http.MethodPost, "/trigger", nil},
				{http.MethodGet, "/next", nil},
				{http.MethodGet, "/runs", nil},
			} {
				rec := b.as(t, bob, r.method, path(j, r.suffix), r.body)
				requireError(t, rec, http.StatusNotFound, apierr.CodeNotFound)
			}
		}
		got := decode[api.Job](t, b.as(t, alice, http.MethodGet, path(aj, ""), nil))
		require.Equal(t, "alice job", got.Name, "unchanged")
		require.Equal(t, job.StatusScheduled, got.Status)
	})

	t.Run("ListsShowOnlyOwnJobs", func(t *testing.T) {
		t.Parallel()
		list := decode[api.JobList](t, b.as(t, bob, http.MethodGet, "/api/v1/jobs", nil))
		require.Empty(t, list.Jobs)
		list = decode[api.JobList](t, b.as(t, alice, http.MethodGet, "/api/v1/jobs", nil))
		require.ElementsMatch(t, []string{"alice job", "alice cron"}, names(list.Jobs))
	})

	t.Run("AdminCreatesForAUserAndSeesTheirHistory", func(t *testing.T) {
		t.Parallel()
		carol := b.user(t, "carol", "user", nil)
		body := spec("for carol", b.now.Add(time.Hour))
		body["owner"] = carol.id.String()
		rec := b.do(t, http.MethodPost, "/api/v1/jobs", body)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		j := decode[api.Job](t, rec)
		require.Equal(t, carol.id, j.Owner)
		require.Equal(t, http.StatusOK, b.as(t, carol, http.MethodGet, path(j, ""), nil).Code)

		b.create(t, "the admin's own", b.now.Add(time.Hour))
		cancelled := spec("cancelled", b.now.Add(2*time.Hour))
		cancelled["owner"] = carol.id.String()
		cj := decode[api.Job](t, b.do(t, http.MethodPost, "/api/v1/jobs", cancelled))
		require.Equal(t, http.StatusNoContent, b.do(t, http.MethodDelete, path(cj, ""), nil).Code)

		rec = b.do(t, http.MethodGet, "/api/v1/users/"+carol.id.String()+"/jobs", nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		list := decode[api.JobList](t, rec)
		require.ElementsMatch(t, []string{"for carol", "cancelled"}, names(list.Jobs), "the user's whole history, and only theirs")
		for _, j := range list.Jobs {
			require.Nil(t, j.LastRun, "never ran")
		}
		requireError(t, b.do(t, http.MethodGet, "/api/v1/users/"+uuid.NewString()+"/jobs", nil), http.StatusNotFound, apierr.CodeNotFound)
	})

	t.Run("OnlyAnAdminNamesAnOwner", func(t *testing.T) {
		t.Parallel()
		body := spec("for alice", b.now.Add(time.Hour))
		body["owner"] = alice.id.String()
		d := requireError(t, b.as(t, bob, http.MethodPost, "/api/v1/jobs", body), http.StatusForbidden, apierr.CodeForbidden)
		require.Equal(t, "owner", d.Field)
		dave := b.user(t, "dave", "user", nil)
		body["owner"] = dave.id.String()
		require.Equal(t, http.StatusCreated, b.as(t, dave, http.MethodPost, "/api/v1/jobs", body).Code, "naming oneself is fine")
		body["owner"] = uuid.NewString()
		d = requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs", body), http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "owner", d.Field)
		body["owner"] = "nobody"
		d = requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs", body), http.StatusBadRequest, apierr.CodeInvalid)
		require.Equal(t, "owner", d.Field)
	})
}

func TestLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("RequestRateAnswers429ThenRecovers", func(t *testing.T) {
		t.Parallel()
		// 600 a minute is one every 100 ms; a burst of 3 passes at once.
		p := b.user(t, "rate", "user", map[string]any{"requests_per_minute": 600, "request_burst": 3})
		var rec *httptest.ResponseRecorder
		for range 20 {
			if rec = b.as(t, p, http.MethodGet, "/api/v1/jobs", nil); rec.Code == http.StatusTooManyRequests {
				break
			}
		}
		requireError(t, rec, http.StatusTooManyRequests, apierr.CodeRateLimited)
		require.Equal(t, "1", rec.Header().Get("Retry-After"))
		require.Equal(t, "600", rec.Header().Get("X-RateLimit-Limit"))
		require.Eventually(t, func() bool {
			return b.as(t, p, http.MethodGet, "/api/v1/jobs", nil).Code == http.StatusOK
		}, 5*time.Second, 50*time.Millisecond, "the bucket refills")
		require.Equal(t, http.StatusOK, b.do(t, http.MethodGet, "/api/v1/jobs", nil).Code, "other callers are not held back")
	})

	t.Run("JobCreationRateAnswers429", func(t *testing.T) {
		t.Parallel()
		p := b.user(t, "creator", "user", map[string]any{"jobs_per_minute": 1, "job_burst": 2})
		for i := range 2 {
			rec := b.as(t, p, http.MethodPost, "/api/v1/jobs", spec("j"+strconv.Itoa(i), b.now.Add(time.Hour)))
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		}
		rec := b.as(t, p, http.MethodPost, "/api/v1/jobs", spec("j3", b.now.Add(time.Hour)))
		requireError(t, rec, http.StatusTooManyRequests, apierr.CodeRateLimited)
		retry, err := strconv.Atoi(rec.Header().Get("Retry-After"))
		require.NoError(t, err)
		require.InDelta(t, 60, retry, 2)
		require.Equal(t, http.StatusOK, b.as(t, p, http.MethodGet, "/api/v1/jobs", nil).Code, "reading is not creating")
	})

	t.Run("ActiveJobCapAnswers429UntilAJobEnds", func(t *testing.T) {
		t.Parallel()
		p := b.user(t, "capped", "user", map[string]any{"max_active_jobs": 2})
		var first api.Job
		for i := range 2 {
			rec := b.as(t, p, http.MethodPost, "/api/v1/jobs", spec("j"+strconv.Itoa(i), b.now.Add(time.Hour)))
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
			first = decode[api.Job](t, rec)
		}
		rec := b.as(t, p, http.MethodPost, "/api/v1/jobs", spec("one too many", b.now.Add(time.Hour)))
		requireError(t, rec, http.StatusTooManyRequests, apierr.CodeQuotaExceeded)
		list := decode[api.JobList](t, b.as(t, p, http.MethodGet, "/api/v1/jobs", nil))
		require.Len(t, list.Jobs, 2, "nothing was stored")

		require.Equal(t, http.StatusNoContent, b.as(t, p, http.MethodDelete, path(first, ""), nil).Code)
		require.Equal(t, http.StatusCreated, b.as(t, p, http.MethodPost, "/api/v1/jobs", spec("fits again", b.now.Add(time.Hour))).Code)
	})

	t.Run("ACapHoldsUnderConcurrentSingleCreates", func(t *testing.T) {
		t.Parallel()
		// The first 90 go without the exact check (activeCounts), the
		// last ten through it: still exactly 100, whatever the order.
		p := b.user(t, "crowd", "user", map[string]any{"max_active_jobs": 100,
			"requests_per_minute": 100000, "request_burst": 1000})
		var wg sync.WaitGroup
		codes := make([]int, 130)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < len(codes); i += 8 {
					codes[i] = b.as(t, p, http.MethodPost, "/api/v1/jobs", spec("c"+strconv.Itoa(i), b.now.Add(time.Hour))).Code
				}
			}()
		}
		wg.Wait()
		created, refused := 0, 0
		for _, c := range codes {
			switch c {
			case http.StatusCreated:
				created++
			case http.StatusTooManyRequests:
				refused++
			}
		}
		require.Equal(t, 100, created, "codes %v", codes)
		require.Equal(t, 30, refused)
	})

	t.Run("AdminsAreHeldOnlyToTheirOwnLimits", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(d *api.Deps) {
			d.Quotas = &api.Quotas{RequestsPerMinute: 1, RequestBurst: 1, JobsPerMinute: 1, JobBurst: 1, MaxActiveJobs: 1}
		})
		for i := range 5 {
			require.Equal(t, http.StatusCreated, b.do(t, http.MethodPost, "/api/v1/jobs", spec("a"+strconv.Itoa(i), b.now.Add(time.Hour))).Code)
		}
	})
}

func TestBodyLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, func(d *api.Deps) { d.MaxBodyBytes = 4096 })

	t.Run("OversizedBodyIs413", func(t *testing.T) {
		t.Parallel()
		body := spec("big", b.now.Add(time.Hour))
		body["name"] = strings.Repeat("x", 5000)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs", body), http.StatusRequestEntityTooLarge, apierr.CodeTooLarge)
		requireError(t, b.do(t, http.MethodPost, "/api/v1/users", strings.NewReader(`{"name":"`+strings.Repeat("x", 5000)+`","role":"user"}`)),
			http.StatusRequestEntityTooLarge, apierr.CodeTooLarge)
		require.Empty(t, decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil)).Jobs, "nothing was stored")
	})

	t.Run("PrivateTargetIsRefused", func(t *testing.T) {
		t.Parallel()
		for _, u := range []string{"http://127.0.0.1:8080/hook", "http://localhost/", "http://169.254.169.254/latest/meta-data/", "http://[::1]/", "http://10.0.0.7/"} {
			body := map[string]any{"name": "ssrf", "type": "webhook", "delay": "1m", "payload": map[string]any{"url": u}}
			d := requireError(t, b.do(t, http.MethodPost, "/api/v1/jobs", body), http.StatusBadRequest, apierr.CodeInvalid)
			require.Equal(t, "payload.url", d.Field, u)
		}
	})
}

func TestAuditLog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.user(t, "audited", "user", nil)

	// Every kind of change, by the user, with a secret in the payload.
	body := map[string]any{"name": "hook", "type": "webhook", "run_at": b.now.Add(time.Hour).Format(time.RFC3339Nano),
		"payload": map[string]any{"url": "https://example.com/hook", "headers": map[string]string{"Authorization": "Bearer s3cr3t-value"}}}
	rec := b.as(t, p, http.MethodPost, "/api/v1/jobs", body)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	j := decode[api.Job](t, rec)
	rec = b.as(t, p, http.MethodPatch, path(j, ""), map[string]any{"name": "hook 2",
		"payload": map[string]any{"url": "https://example.com/hook", "headers": map[string]string{"Authorization": "Bearer other-s3cr3t"}}})
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Equal(t, http.StatusOK, b.as(t, p, http.MethodPost, path(j, "/pause"), nil).Code)
	require.Equal(t, http.StatusOK, b.as(t, p, http.MethodPost, path(j, "/resume"), nil).Code)
	require.Equal(t, http.StatusAccepted, b.as(t, p, http.MethodPost, path(j, "/trigger"), nil).Code)
	require.Equal(t, http.StatusNoContent, b.as(t, p, http.MethodDelete, path(j, ""), nil).Code)
	keyRec := b.as(t, p, http.MethodPost, "/api/v1/users/"+p.id.String()+"/keys", nil)
	require.Equal(t, http.StatusCreated, keyRec.Code)
	k := decode[api.Key](t, keyRec)
	require.Equal(t, http.StatusNoContent, b.as(t, p, http.MethodDelete, "/api/v1/keys/"+k.ID.String(), nil).Code)

	t.Run("EveryActionIsRecordedWithItsActor", func(t *testing.T) {
		t.Parallel()
		rec := b.do(t, http.MethodGet, "/api/v1/audit?actor="+p.id.String(), nil)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		list := decode[api.AuditList](t, rec)
		var actions []string
		for _, e := range list.Entries {
			require.Equal(t, p.id, e.Actor)
			require.False(t, e.At.IsZero())
			actions = append(actions, e.Action)
		}
		require.Equal(t, []string{"key.revoke", "key.create", "job.cancel", "job.trigger", "job.resume", "job.pause", "job.update", "job.create"}, actions, "newest first")

		require.NotContains(t, rec.Body.String(), "s3cr3t", "no secret in the audit log")
		require.NotContains(t, rec.Body.String(), k.Key)

		var update api.AuditEntry
		for _, e := range list.Entries {
			if e.Action == "job.update" {
				update = e
			}
		}
		var change map[string]any
		require.NoError(t, json.Unmarshal(update.Change, &change))
		require.Equal(t, map[string]any{"from": "hook", "to": "hook 2"}, change["name"])
		require.Equal(t, "changed", change["payload"])
	})

	t.Run("AdminActionsAreRecordedAsTheAdmin", func(t *testing.T) {
		t.Parallel()
		list := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?actor="+store.BootstrapAdmin.String()+"&action=user.create", nil))
		require.NotEmpty(t, list.Entries)
		for _, e := range list.Entries {
			require.Equal(t, "user.create", e.Action)
			require.Equal(t, "user", e.TargetType)
		}
		list = decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?actor="+store.BootstrapAdmin.String()+"&action=key.create", nil))
		require.NotEmpty(t, list.Entries)
	})

	t.Run("FiltersByJobAndTimeAndPages", func(t *testing.T) {
		t.Parallel()
		list := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?job="+j.ID.String()+"&limit=4", nil))
		require.Len(t, list.Entries, 4)
		require.NotEmpty(t, list.NextCursor)
		rest := decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?job="+j.ID.String()+"&limit=4&cursor="+list.NextCursor, nil))
		require.Len(t, rest.Entries, 2)
		require.Empty(t, rest.NextCursor)
		for _, e := range append(list.Entries, rest.Entries...) {
			require.Equal(t, j.ID, e.TargetID)
		}
		since := url(b.now.Add(time.Minute))
		require.Empty(t, decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?job="+j.ID.String()+"&since="+since, nil)).Entries)
		require.Len(t, decode[api.AuditList](t, b.do(t, http.MethodGet, "/api/v1/audit?job="+j.ID.String()+"&until="+since, nil)).Entries, 6)
	})

	t.Run("BadFiltersAre400", func(t *testing.T) {
		t.Parallel()
		for q, field := range map[string]string{"actor=x": "actor", "job=1": "job", "since=yesterday": "since", "cursor=zz": "cursor", "limit=0": "limit"} {
			d := requireError(t, b.do(t, http.MethodGet, "/api/v1/audit?"+q, nil), http.StatusBadRequest, apierr.CodeInvalid)
			require.Equal(t, field, d.Field, q)
		}
	})
}

// other is a one-character string that is not c.
func other(c string) string {
	if c == "A" {
		return "B"
	}
	return "A"
}

// url writes a time for a query string.
func url(t time.Time) string {
	return strings.ReplaceAll(t.UTC().Format(time.RFC3339Nano), "+", "%2B")
}
