package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/services/dashboard/api"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// badTexts are strings Postgres cannot store, as they appear inside a JSON
// string: a NUL, bytes that are not UTF-8, and half a surrogate pair.
var badTexts = map[string]string{
	"nul":       `a\u0000b`,
	"not-utf8":  "a\xff\xfeb",
	"surrogate": `a\ud800b`,
}

// jobWith is a job body in which one string, at the place marked @@, is bad
// (payload.headers: a header's name).
var jobWith = map[string]string{
	"name":                      `{"name":"@@","type":"ping","delay":"1h","payload":{"url":"https://example.com/"}}`,
	"delay":                     `{"name":"n","type":"ping","delay":"@@","payload":{"url":"https://example.com/"}}`,
	"timezone":                  `{"name":"n","type":"ping","delay":"1h","timezone":"@@","payload":{"url":"https://example.com/"}}`,
	"run_on":                    `{"name":"n","type":"ping","run_on":"@@","timezone":"UTC","payload":{"url":"https://example.com/"}}`,
	"type":                      `{"name":"n","type":"@@","delay":"1h","payload":{"url":"https://example.com/"}}`,
	"timeout":                   `{"name":"n","type":"ping","delay":"1h","timeout":"@@","payload":{"url":"https://example.com/"}}`,
	"schedule.cron":             `{"name":"n","type":"ping","schedule":{"cron":"@@"},"payload":{"url":"https://example.com/"}}`,
	"schedule.timezone":         `{"name":"n","type":"ping","schedule":{"cron":"@daily","timezone":"@@"},"payload":{"url":"https://example.com/"}}`,
	"payload.url":               `{"name":"n","type":"ping","delay":"1h","payload":{"url":"https://example.com/@@"}}`,
	"payload.method":            `{"name":"n","type":"webhook","delay":"1h","payload":{"url":"https://example.com/","method":"@@"}}`,
	"payload.headers.X-Trace":   `{"name":"n","type":"webhook","delay":"1h","payload":{"url":"https://example.com/","headers":{"X-Trace":"@@"}}}`,
	"payload.headers":           `{"name":"n","type":"webhook","delay":"1h","payload":{"url":"https://example.com/","headers":{"@@":"v"}}}`,
	"payload.body.order.ids[1]": `{"name":"n","type":"webhook","delay":"1h","payload":{"url":"https://example.com/","body":{"order":{"ids":["ok","@@"]}}}}`,
	"payload.text":              `{"name":"n","type":"slack","delay":"1h","payload":{"webhook_url":"https://hooks.slack.com/services/T/B/X","text":"@@"}}`,
	"payload.subject":           `{"name":"n","type":"email","delay":"1h","payload":{"to":["a@example.com"],"subject":"@@","text":"t"}}`,
	"payload.to[0]":             `{"name":"n","type":"email","delay":"1h","payload":{"to":["@@"],"subject":"s","text":"t"}}`,
}

// TestTextPostgresCannotStore sends every string field of a job holding a
// NUL, bytes that are not UTF-8, or half a surrogate pair: each is a 400
// naming the field (in a batch, with the job's index), never a 5xx, and
// nothing is created.
func TestTextPostgresCannotStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for field, body := range jobWith {
		for kind, bad := range badTexts {
			t.Run(field+"/"+kind, func(t *testing.T) {
				t.Parallel()
				raw := strings.Replace(body, "@@", bad, 1)
				rec := b.do(t, http.MethodPost, "/api/v1/jobs", raw)
				e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
				require.Equal(t, field, e.Field, "message: %s", e.Message)

				ok := `{"name":"fine","type":"ping","delay":"1h","payload":{"url":"https://example.com/"}}`
				rec = b.do(t, http.MethodPost, "/api/v1/jobs:batch", `{"jobs":[`+ok+`,`+ok+`,`+raw+`]}`)
				require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
				batch := decode[api.BatchErrorBody](t, rec)
				require.Len(t, batch.Errors, 1, rec.Body.String())
				require.Equal(t, 2, batch.Errors[0].Index)
				require.Equal(t, e.Field, batch.Errors[0].Field)
			})
		}
	}
	t.Run("PatchNamesTheField", func(t *testing.T) {
		t.Parallel()
		j := b.create(t, "to-patch", b.now.Add(3600e9))
		rec := b.do(t, http.MethodPatch, "/api/v1/jobs/"+j.ID.String(), `{"name":"a\u0000b"}`)
		require.Equal(t, "name", requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid).Field)
	})
	t.Run("QueryParametersToo", func(t *testing.T) {
		t.Parallel()
		for _, q := range []string{"q=a%00b", "q=%ff%fe", "status=%00"} {
			rec := b.do(t, http.MethodGet, "/api/v1/jobs?"+q, nil)
			e := requireError(t, rec, http.StatusBadRequest, apierr.CodeInvalid)
			require.Equal(t, strings.Split(q, "=")[0], e.Field)
		}
	})
	t.Run("NothingWasCreated", func(t *testing.T) {
		t.Parallel()
		var n int
		require.NoError(t, b.store.Pool().QueryRow(t.Context(), `SELECT count(*) FROM jobs WHERE name <> 'to-patch'`).Scan(&n))
		require.Zero(t, n)
	})
}

// TestTextUnfitToShow: a job's name and label values, a user's name and an
// API key's name holding a control character or a bidirectional formatting
// character are a 400 naming the field, on create and on change, and change
// nothing.
func TestTextUnfitToShow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ann := b.user(t, "ann", "user", nil)
	j := b.create(t, "kept", b.now.Add(time.Hour))
	for name, bad := range map[string]string{
		"CR": "a\rb", "LF": "forged\nline", "TrailingLF": "name\n", "ESC": "\x1b[31mred", "Tab": "a\tb",
		"C1": "a\u0085b", "RightToLeftOverride": "txt\u202eexe", "Isolate": "a\u2067b\u2069",
	} {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				what, method, path string
				body               map[string]any
				field              string
			}{
				{"job name", http.MethodPost, "/api/v1/jobs", map[string]any{"name": bad, "type": "ping", "delay": "1h",
					"payload": map[string]any{"url": "https://example.com/"}}, "name"},
				{"label value", http.MethodPost, "/api/v1/jobs", map[string]any{"name": "n", "type": "ping", "delay": "1h",
					"labels": map[string]string{"team": bad}, "payload": map[string]any{"url": "https://example.com/"}}, "labels.team"},
				{"job rename", http.MethodPatch, "/api/v1/jobs/" + j.ID.String(), map[string]any{"name": bad}, "name"},
				{"user name", http.MethodPost, "/api/v1/users", map[string]any{"name": bad, "role": "user"}, "name"},
				{"user rename", http.MethodPatch, "/api/v1/users/" + ann.id.String(), map[string]any{"name": bad}, "name"},
				{"key name", http.MethodPost, "/api/v1/users/" + ann.id.String() + "/keys", map[string]any{"name": bad}, "name"},
			} {
				e := requireError(t, b.do(t, tc.method, tc.path, tc.body), http.StatusBadRequest, apierr.CodeInvalid)
				require.Equal(t, tc.field, e.Field, tc.what)
			}
		})
	}
	require.Equal(t, "kept", decode[api.Job](t, b.do(t, http.MethodGet, "/api/v1/jobs/"+j.ID.String(), nil)).Name)
	require.Len(t, decode[api.JobList](t, b.do(t, http.MethodGet, "/api/v1/jobs", nil)).Jobs, 1, "no job was created")
	require.Equal(t, "ann", decode[api.User](t, b.do(t, http.MethodGet, "/api/v1/users/"+ann.id.String(), nil)).Name)
	require.Len(t, decode[api.UserList](t, b.do(t, http.MethodGet, "/api/v1/users", nil)).Users, 2, "the administrator and ann")
	require.Len(t, decode[api.KeyList](t, b.do(t, http.MethodGet, "/api/v1/users/"+ann.id.String()+"/keys", nil)).Keys, 1, "no key was created")
}
