package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/e2e/cluster"
	"github.com/tockhq/tock/pkg/testenv"
	tock "github.com/tockhq/tock/sdk/go"
)

// receiver is an HTTP server that keeps every request's path and headers.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	seen []http.Request
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.seen = append(r.seen, http.Request{URL: req.URL, Header: req.Header.Clone()})
		r.mu.Unlock()
		if strings.HasSuffix(req.URL.Path, "/fail") {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(r.Close)
	return r
}

// find returns the requests whose path starts with prefix.
func (r *receiver) find(prefix string) []http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []http.Request
	for _, q := range r.seen {
		if strings.HasPrefix(q.URL.Path, prefix) {
			out = append(out, q)
		}
	}
	return out
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// rabbitUser makes a RabbitMQ user of the test's own with a random password,
// so that the password is a value found nowhere else; with no local
// rabbitmqctl (a remote broker), the broker's URL is used as it is.
func rabbitUser(t *testing.T, brokerURL string) (string, string) {
	u, err := url.Parse(brokerURL)
	require.NoError(t, err)
	if _, err := exec.LookPath("rabbitmqctl"); err != nil || os.Getenv("TOCK_TEST_AMQP_URL") != "" {
		pass, _ := u.User.Password()
		return brokerURL, pass
	}
	user, pass := "tock-"+randomHex(t, 4), "amqp-"+randomHex(t, 12)
	ctl := func(args ...string) {
		out, err := exec.Command("rabbitmqctl", args...).CombinedOutput()
		require.NoError(t, err, "rabbitmqctl %v: %s", args, out)
	}
	ctl("add_user", user, pass)
	t.Cleanup(func() { _ = exec.Command("rabbitmqctl", "delete_user", user).Run() })
	ctl("set_permissions", "-p", "/", user, ".*", ".*", ".*")
	u.User = url.UserPassword(user, pass)
	return u.String(), pass
}

// TestWriteOnlySecrets is the write-only secrets' acceptance on the real
// services: jobs holding every kind of secret (webhook and notify headers, a
// Slack URL's token, an AMQP password, a NATS token) and a signing secret
// rotated under an Idempotency-Key. The worker delivers with the right
// credentials; no answer of any route, to the owner or to a jobs:read key,
// holds a secret (the signing secret's own GET aside), nor does a dump of
// every table; tock apply of the same file is a no-op, and of a changed
// secret is one change.
func TestWriteOnlySecrets(t *testing.T) {
	rec := newReceiver(t)
	natsURL := testenv.NATSURL()
	testenv.Broker(t, natsURL)
	amqpURL, amqpPass := rabbitUser(t, testenv.AMQPURL())
	testenv.Broker(t, amqpURL)
	c := start(t, cluster.Options{Schedulers: 1, Workers: 1})
	ctx := t.Context()
	admin := c.API()
	owner, ownerID, token := newUser(t, admin, "secret-keeper")
	sdk := tock.New(c.APIURL, token)

	tag := randomHex(t, 6)
	webhookAuth := "Bearer wh-" + randomHex(t, 12)
	webhookKey := "key-" + randomHex(t, 12)
	notifyAuth := "Bearer nt-" + randomHex(t, 12)
	slackToken := "slk" + randomHex(t, 12)
	natsToken := "nats-" + randomHex(t, 12)
	secrets := []string{webhookAuth, webhookKey, notifyAuth, slackToken, natsToken, amqpPass}

	// The queue and the subject the broker jobs deliver to.
	queue := "tock-secrets-" + tag
	conn, err := amqp.Dial(testenv.AMQPURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	require.NoError(t, err)
	_, err = ch.QueueDeclare(queue, false, true, false, false, nil)
	require.NoError(t, err)
	msgs, err := ch.Consume(queue, "", true, false, false, false, nil)
	require.NoError(t, err)
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	natsMsgs := make(chan *nats.Msg, 4)
	sub, err := nc.ChanSubscribe("tock.secrets."+tag, natsMsgs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	nu, err := url.Parse(natsURL)
	require.NoError(t, err)
	nu.User = url.User(natsToken)

	in := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339Nano) }
	jobs := map[string]map[string]any{
		"webhook": {"name": "webhook with credentials", "type": "webhook", "run_at": in(2 * time.Second),
			"payload": map[string]any{"url": rec.URL + "/hook", "headers": map[string]string{
				"Authorization": webhookAuth, "X-Api-Key": webhookKey, "Content-Type": "application/json"},
				"body": map[string]any{"tag": tag}}},
		"alerting": {"name": "fails and alerts", "type": "webhook", "run_at": in(2 * time.Second), "max_retries": 0,
			"payload": map[string]any{"url": rec.URL + "/fail"},
			"notify": map[string]any{"on": []string{"permanently_failed"},
				"webhook": map[string]any{"url": rec.URL + "/alert", "headers": map[string]string{"Authorization": notifyAuth}}}},
		"slack": {"name": "slack message", "type": "slack", "run_at": in(2 * time.Second),
			"payload": map[string]any{"webhook_url": rec.URL + "/services/T0/B0/" + slackToken, "text": "hello " + tag}},
		"amqp": {"name": "amqp message", "type": "amqp", "run_at": in(2 * time.Second),
			"payload": map[string]any{"url": amqpURL, "exchange": "", "routing_key": queue, "body": map[string]any{"tag": tag}}},
		"recurring": {"name": "recurring webhook", "type": "webhook", "schedule": map[string]any{"cron": "0 3 1 1 *"},
			"payload": map[string]any{"url": rec.URL + "/yearly", "headers": map[string]string{"Authorization": webhookAuth}},
			"notify":  map[string]any{"on": []string{"failed"}, "slack": map[string]any{"webhook_url": rec.URL + "/services/T1/B1/" + slackToken}}},
		"nats": {"name": "nats message", "type": "nats", "run_at": in(2 * time.Second),
			"payload": map[string]any{"url": nu.String(), "subject": "tock.secrets." + tag, "body": map[string]any{"tag": tag}}},
	}
	// answers are the bodies of every answer the test received.
	var answers []string
	keep := func(b []byte) { answers = append(answers, string(b)) }
	do := func(a *cluster.API, method, path string, body any, want int, hdr ...string) []byte {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			require.NoError(t, err)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, a.Base+path, rd)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+a.Token)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := a.HTTP.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, want, resp.StatusCode, "%s %s: %s", method, path, b)
		keep(b)
		return b
	}
	ids := map[string]string{}
	for name, j := range jobs {
		j["key"] = "secret-" + name + "-" + tag
		var got struct {
			ID string `json:"id"`
		}
		body := do(owner, http.MethodPost, "/api/v1/jobs", j, http.StatusCreated)
		require.NoError(t, json.Unmarshal(body, &got))
		ids[name] = got.ID
		// A NATS token stands in a URL's user, where ':' is escaped.
		fp := "secret:sha256:"
		if name == "nats" {
			fp = "secret%3Asha256%3A"
		}
		require.Contains(t, string(body), fp, "%s: the view shows fingerprints", name)
	}

	// The signing secret, rotated under an Idempotency-Key as the SDK does,
	// and the rotation repeated: the replay must not hold it.
	var rotated struct {
		Secret string `json:"secret"`
	}
	require.NoError(t, json.Unmarshal(do(owner, http.MethodPost, "/api/v1/signing-secret:rotate", map[string]any{}, http.StatusOK,
		"Idempotency-Key", "rotate-"+tag), &rotated))
	require.NotEmpty(t, rotated.Secret)
	answers = answers[:len(answers)-1] // the first answer shows it, by design
	do(owner, http.MethodPost, "/api/v1/signing-secret:rotate", map[string]any{}, http.StatusOK, "Idempotency-Key", "rotate-"+tag)

	// The worker delivers with the credentials themselves.
	require.True(t, cluster.WaitUntil(30*time.Second, 100*time.Millisecond, func() bool {
		return len(rec.find("/hook")) > 0 && len(rec.find("/alert")) > 0 && len(rec.find("/services/")) > 0
	}), "the webhook, the alert and the Slack message arrived")
	hook := rec.find("/hook")[0]
	require.Equal(t, webhookAuth, hook.Header.Get("Authorization"))
	require.Equal(t, webhookKey, hook.Header.Get("X-Api-Key"))
	require.Equal(t, notifyAuth, rec.find("/alert")[0].Header.Get("Authorization"))
	require.Equal(t, "/services/T0/B0/"+slackToken, rec.find("/services/")[0].URL.Path)
	select {
	case m := <-msgs:
		require.Contains(t, string(m.Body), tag, "the AMQP message, published with the password")
	case <-time.After(20 * time.Second):
		t.Fatal("the AMQP message did not arrive")
	}
	select {
	case m := <-natsMsgs:
		require.Contains(t, string(m.Data), tag, "the NATS message, published with the token")
	case <-time.After(20 * time.Second):
		t.Fatal("the NATS message did not arrive")
	}

	// No answer holds a secret: the owner's, a jobs:read key's, an
	// administrator's, on every route that reads jobs, runs or the audit log.
	var readKey struct {
		Key string `json:"key"`
	}
	require.NoError(t, json.Unmarshal(do(owner, http.MethodPost, "/api/v1/users/"+ownerID+"/keys",
		map[string]any{"name": "wall screen", "scopes": []string{"jobs:read", "runs:read"}}, http.StatusCreated), &readKey))
	reader := &cluster.API{Base: owner.Base, Token: readKey.Key, HTTP: owner.HTTP}
	routes := []string{"/api/v1/jobs", "/api/v1/jobs?limit=500", "/api/v1/jobs:counts", "/api/v1/runs", "/api/v1/runs:stats", "/api/v1/me"}
	for name, id := range ids {
		routes = append(routes, "/api/v1/jobs/"+id, "/api/v1/jobs/"+id+"/runs", "/api/v1/jobs/"+id+"/next",
			"/api/v1/jobs/by-key/"+url.PathEscape("secret-"+name+"-"+tag))
	}
	for _, a := range []*cluster.API{owner, reader} {
		for _, r := range routes {
			do(a, http.MethodGet, r, nil, http.StatusOK)
		}
	}
	for _, r := range append(routes, "/api/v1/audit?limit=500", "/api/v1/users/"+ownerID+"/jobs", "/api/v1/system") {
		if strings.Contains(r, "/by-key/") {
			r += "?owner=" + ownerID // an administrator names whose key
		}
		do(admin, http.MethodGet, r, nil, http.StatusOK)
	}
	// A dry run and a real edit answer fingerprints too.
	do(owner, http.MethodPatch, "/api/v1/jobs/"+ids["recurring"]+"?dry_run=true",
		map[string]any{"payload": map[string]any{"url": rec.URL + "/yearly", "headers": map[string]string{"Authorization": webhookAuth + "x"}},
			"name": "renamed"}, http.StatusOK)
	do(owner, http.MethodPatch, "/api/v1/jobs/"+ids["recurring"], map[string]any{"name": "renamed", "max_retries": 5}, http.StatusOK)
	for _, body := range answers {
		for _, s := range append(secrets, rotated.Secret) {
			require.NotContains(t, body, s, "an answer holds a secret")
		}
	}

	// A dump of every table holds none of them.
	dump, err := exec.CommandContext(ctx, "pg_dump", "--data-only", c.DatabaseURL).Output()
	require.NoError(t, err)
	require.Contains(t, string(dump), "secret:sha256:", "the dump holds the jobs, with fingerprints")
	for _, s := range append(secrets, rotated.Secret) {
		require.NotContains(t, string(dump), s, "the dump holds a secret")
	}

	// tock apply: the same secrets are no change; a changed one is one.
	file := func(auth string) string {
		doc := map[string]any{"jobs": []any{map[string]any{
			"key": "applied-" + tag, "name": "applied webhook", "type": "webhook", "schedule": map[string]any{"cron": "0 9 * * *"},
			"payload": map[string]any{"url": "https://example.com/hook", "headers": map[string]string{"Authorization": auth}},
			"notify":  map[string]any{"on": []string{"failed"}, "slack": map[string]any{"webhook_url": "https://hooks.slack.com/services/T0/B0/" + slackToken}},
		}}}
		b, err := json.Marshal(doc)
		require.NoError(t, err)
		f := filepath.Join(t.TempDir(), "schedules.json")
		require.NoError(t, os.WriteFile(f, b, 0o600))
		return f
	}
	first := cli(t, c, token, "apply", "-f", file(webhookAuth))
	require.Equal(t, 0, first.code)
	again := cli(t, c, token, "apply", "-f", file(webhookAuth), "-o", "json")
	require.Equal(t, 0, again.code)
	var res struct {
		Changed   bool `json:"changed"`
		Unchanged int  `json:"unchanged"`
		Jobs      []struct {
			Changes []struct {
				Field string `json:"field"`
			} `json:"changes"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(again.out), &res))
	require.False(t, res.Changed, "applying the same secrets again changes nothing")
	require.Equal(t, 1, res.Unchanged)
	fresh := "Bearer new-" + randomHex(t, 12)
	changed := cli(t, c, token, "apply", "-f", file(fresh), "--dry-run", "-o", "json")
	require.Equal(t, 0, changed.code)
	require.NoError(t, json.Unmarshal([]byte(changed.out), &res))
	require.Len(t, res.Jobs, 1)
	require.Len(t, res.Jobs[0].Changes, 1, "a changed secret is one change: %s", changed.out)
	require.Equal(t, "payload.headers.Authorization", res.Jobs[0].Changes[0].Field)
	require.NotContains(t, changed.out, fresh)
	require.NotContains(t, changed.out, webhookAuth)

	// A fingerprint is not a way to move a secret: not into another job,
	// nor to another host.
	var view struct {
		Payload map[string]any `json:"payload"`
	}
	require.NoError(t, json.Unmarshal(do(owner, http.MethodGet, "/api/v1/jobs/"+ids["recurring"], nil, http.StatusOK), &view))
	copied := map[string]any{"name": "copy", "type": "webhook", "delay": "1h", "payload": view.Payload}
	do(owner, http.MethodPost, "/api/v1/jobs", copied, http.StatusBadRequest)
	j, err := sdk.Jobs.Create(ctx, tock.JobSpec{Name: "kept", Type: "webhook", Delay: "1h", Key: "kept-" + tag,
		Payload: map[string]any{"url": rec.URL + "/kept", "headers": map[string]string{"Authorization": webhookAuth}}})
	require.NoError(t, err)
	var kept map[string]any
	require.NoError(t, json.Unmarshal(j.Payload, &kept))
	kept["url"] = "https://example.com/elsewhere"
	_, err = sdk.Jobs.Update(ctx, j.ID, tock.JobPatch{Payload: kept})
	require.Error(t, err, "a fingerprint sent to another host is refused")
	kept["url"] = rec.URL + "/kept"
	kept["method"] = "PUT"
	_, err = sdk.Jobs.Update(ctx, j.ID, tock.JobPatch{Payload: kept})
	require.NoError(t, err, "a fingerprint sent back in its place, to the same host, keeps its secret")
	_, err = sdk.Jobs.Trigger(ctx, j.ID)
	require.NoError(t, err)
	require.True(t, cluster.WaitUntil(15*time.Second, 100*time.Millisecond, func() bool { return len(rec.find("/kept")) > 0 }))
	require.Equal(t, webhookAuth, rec.find("/kept")[0].Header.Get("Authorization"), "the kept secret is delivered")
}
