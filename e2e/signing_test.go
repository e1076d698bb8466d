package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
)

// TestSignedDeliveries runs the services with an operator key, as a
// deployment does: the signing secret is sealed in Postgres (the table holds
// no trace of it), deliveries verify under the secret the API shows, and
// after a rotation with a grace period each delivery verifies under the new
// secret and the old one alike.
func TestSignedDeliveries(t *testing.T) {
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	ctx := t.Context()
	api, userID, err := c.API().User(ctx, "signed", nil)
	require.NoError(t, err)

	type delivery struct {
		header string
		body   []byte
	}
	var mu sync.Mutex
	var got []delivery
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{r.Header.Get("X-Tock-Signature"), b})
		mu.Unlock()
	}))
	defer recv.Close()
	deliver := func(name string) delivery {
		t.Helper()
		mu.Lock()
		before := len(got)
		mu.Unlock()
		var j struct{ ID string }
		code, err := api.Do(ctx, http.MethodPost, "/api/v1/jobs", map[string]any{"name": name, "type": "webhook", "delay": "1s",
			"payload": map[string]any{"url": recv.URL + "/hook", "body": map[string]any{"n": name}}}, &j)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
		require.True(t, cluster.WaitUntil(20*time.Second, 50*time.Millisecond, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) > before
		}), "delivered")
		mu.Lock()
		defer mu.Unlock()
		return got[len(got)-1]
	}
	type secretView struct {
		Secret             string     `json:"secret"`
		PreviousValidUntil *time.Time `json:"previous_valid_until"`
	}
	var first secretView
	code, err := api.Do(ctx, http.MethodGet, "/api/v1/signing-secret", nil, &first)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)

	db, err := pgx.Connect(ctx, c.DatabaseURL)
	require.NoError(t, err)
	defer db.Close(ctx)
	var stored string
	require.NoError(t, db.QueryRow(ctx, `SELECT signing_secret FROM users WHERE id = $1`, userID).Scan(&stored))
	require.True(t, strings.HasPrefix(stored, "enc:v1:"), "sealed at rest: %.12s...", stored)
	require.NotContains(t, stored, first.Secret)

	d := deliver("before")
	require.True(t, verifySignature(first.Secret, d.header, d.body), "verifies under the secret the API shows")
	require.Equal(t, 1, strings.Count(d.header, "v1="))

	var second secretView
	code, err = api.Do(ctx, http.MethodPost, "/api/v1/signing-secret:rotate", map[string]any{"grace": "1h"}, &second)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.NotNil(t, second.PreviousValidUntil)
	d = deliver("during")
	require.Equal(t, 2, strings.Count(d.header, "v1="), d.header)
	require.True(t, verifySignature(second.Secret, d.header, d.body), "a receiver with the new secret verifies")
	require.True(t, verifySignature(first.Secret, d.header, d.body), "a receiver still on the old one verifies")

	code, err = api.Do(ctx, http.MethodPost, "/api/v1/signing-secret:rotate", map[string]any{"grace": "0s"}, &second)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	d = deliver("after")
	require.Equal(t, 1, strings.Count(d.header, "v1="), d.header)
	require.True(t, verifySignature(second.Secret, d.header, d.body))
	require.False(t, verifySignature(first.Secret, d.header, d.body), "the first secret signs no more")
}

// verifySignature is docs/webhooks.md's receiver check, without the clock.
func verifySignature(secret, header string, body []byte) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	for _, s := range sigs {
		if hmac.Equal([]byte(want), []byte(s)) {
			return true
		}
	}
	return false
}
