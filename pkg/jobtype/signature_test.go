package jobtype_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/jobtype"
)

// verify checks an X-Tock-Signature the way docs/webhooks.md tells receivers to:
// any v1 may match (during a rotation, one per secret).
func verify(secret, header string, body []byte, now time.Time) bool {
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
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	for _, sig := range sigs {
		if hmac.Equal([]byte(want), []byte(sig)) {
			return true
		}
	}
	return false
}

func TestSignature(t *testing.T) {
	t.Parallel()

	t.Run("WebhookIsSignedOverTimestampAndBody", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL, Body: json.RawMessage(`{"order":42}`)})
		tk.SigningSecret = "s3cret-of-owner"
		require.True(t, execute(t, b.registry, tk).OK)
		got := b.received()[0]
		header := got.Header.Get("X-Tock-Signature")
		require.True(t, verify("s3cret-of-owner", header, got.Body, time.Now()), "signature %q verifies", header)
		require.False(t, verify("another-owner", header, got.Body, time.Now()), "another secret does not verify")
		require.False(t, verify("s3cret-of-owner", header, []byte(`{"order":43}`), time.Now()), "a changed body does not verify")
		require.False(t, verify("s3cret-of-owner", header, got.Body, time.Now().Add(time.Hour)), "an old timestamp is refused")
	})

	t.Run("DuringARotationBothSecretsSign", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypeWebhook, jobtype.WebhookPayload{URL: b.srv.URL, Body: json.RawMessage(`{"order":42}`)})
		tk.SigningSecret, tk.PreviousSigningSecret = "new-secret", "old-secret"
		require.True(t, execute(t, b.registry, tk).OK)
		got := b.received()[0]
		header := got.Header.Get("X-Tock-Signature")
		require.Equal(t, 2, strings.Count(header, "v1="), header)
		require.True(t, verify("new-secret", header, got.Body, time.Now()), "a receiver that switched verifies")
		require.True(t, verify("old-secret", header, got.Body, time.Now()), "a receiver that has not yet verifies")
		require.False(t, verify("other", header, got.Body, time.Now()))
	})

	t.Run("PingIsSignedOverAnEmptyBody", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		tk := task(t, jobtype.TypePing, jobtype.PingPayload{URL: b.srv.URL})
		tk.SigningSecret = "k"
		require.True(t, execute(t, b.registry, tk).OK)
		require.True(t, verify("k", b.received()[0].Header.Get("X-Tock-Signature"), nil, time.Now()))
	})

	t.Run("NoSecretNoSignature", func(t *testing.T) {
		t.Parallel()
		b := setup(t, nil)
		require.True(t, execute(t, b.registry, task(t, jobtype.TypePing, jobtype.PingPayload{URL: b.srv.URL})).OK)
		require.Empty(t, b.received()[0].Header.Get("X-Tock-Signature"))
	})
}

func TestExpectations(t *testing.T) {
	t.Parallel()
	created := func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"state":"queued"}`))
	}
	for _, tt := range []struct {
		name    string
		payload any
		ok      bool
		errPart string
	}{
		{"DefaultAccepts2xx", jobtype.WebhookPayload{}, true, ""},
		{"ExactStatusMatches", jobtype.WebhookPayload{ExpectStatus: "201"}, true, ""},
		{"OtherStatusFails", jobtype.WebhookPayload{ExpectStatus: "200"}, false, "status 201"},
		{"RangeAndClass", jobtype.WebhookPayload{ExpectStatus: "200-200, 2xx"}, true, ""},
		{"BodyMatches", jobtype.WebhookPayload{ExpectBody: `"queued"`}, true, ""},
		{"BodyMissingFails", jobtype.WebhookPayload{ExpectBody: "done"}, false, "does not contain expect_body"},
		{"PingExpectStatus", jobtype.PingPayload{ExpectStatus: "4xx"}, false, "status 201"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, created)
			var tk jobtype.Task
			switch p := tt.payload.(type) {
			case jobtype.WebhookPayload:
				p.URL = b.srv.URL
				tk = task(t, jobtype.TypeWebhook, p)
			case jobtype.PingPayload:
				p.URL = b.srv.URL
				tk = task(t, jobtype.TypePing, p)
			}
			out := execute(t, b.registry, tk)
			require.Equal(t, tt.ok, out.OK, out.Error)
			require.Equal(t, http.StatusCreated, out.StatusCode)
			if tt.errPart != "" {
				require.Contains(t, out.Error, tt.errPart)
			}
		})
	}
}
