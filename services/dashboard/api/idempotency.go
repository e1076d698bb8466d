package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"
	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/lifecycle"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

const (
	// idempotencyHeader names a write so that a client may repeat it safely.
	idempotencyHeader = "Idempotency-Key"
	// replayedHeader marks a response that repeats the first one to a key.
	replayedHeader = "Idempotent-Replayed"
	// maxIdempotencyKey bounds a key's length.
	maxIdempotencyKey = 255
)

// idempotent makes a write repeatable under an Idempotency-Key header,
// scoped to the caller: the first request with a key runs and its answer
// is kept for store.IdempotencyWindow; a repeat of the same request (same
// method, path, query and body) gets that answer again, with
// Idempotent-Replayed: true, and changes nothing. The same key on a
// different request is 422, and a repeat while the first is still running
// is 409. Only a final answer is kept (see final): after a 429 or a server
// error (5xx) the key is released, so a repeat runs again. An answer that
// holds a secret is kept redacted, as its handler says (keepRedacted).
func (s *Server) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		req := c.Request()
		values := req.Header.Values(idempotencyHeader)
		if len(values) == 0 {
			return next(c)
		}
		if len(values) > 1 {
			return apierr.Invalid(idempotencyHeader, "give one Idempotency-Key header, not several")
		}
		key := values[0]
		if err := checkIdempotencyKey(key); err != nil {
			return err
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			if errors.As(err, new(*http.MaxBytesError)) {
				return errTooLarge
			}
			return apierr.Invalid("", "the request body could not be read")
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		h := sha256.New()
		for _, part := range []string{req.Method, req.URL.Path, req.URL.RawQuery} {
			h.Write([]byte(part))
			h.Write([]byte{0})
		}
		h.Write(body)
		owner := access.Caller(c).User
		state, stored, err := s.store.ClaimIdempotencyKey(req.Context(), owner, key, h.Sum(nil), s.clock())
		if err != nil {
			return err
		}
		switch state {
		case store.KeyReplay:
			hdr := c.Response().Header()
			if stored.ContentType != "" {
				hdr.Set(echo.HeaderContentType, stored.ContentType)
			}
			if stored.Location != "" {
				hdr.Set(echo.HeaderLocation, stored.Location)
			}
			hdr.Set(replayedHeader, "true")
			c.Response().WriteHeader(stored.Status)
			_, _ = c.Response().Write(stored.Body)
			return nil
		case store.KeyInFlight:
			// Soon done, or soon settled by settleKey after an outage.
			c.Response().Header().Set("Retry-After", "1")
			return apierr.New(http.StatusConflict, apierr.CodeConflict, idempotencyHeader,
				"a request with this Idempotency-Key is still being answered; repeat it once that is done")
		case store.KeyReused:
			return apierr.New(http.StatusUnprocessableEntity, apierr.CodeIdempotencyKeyReused, idempotencyHeader,
				"this Idempotency-Key was used for a different request within the last 24 hours")
		}
		return s.runIdempotent(c, next, owner, key)
	}
}

// runIdempotent runs the first request with key and keeps its answer.
func (s *Server) runIdempotent(c *echo.Context, next echo.HandlerFunc, owner uuid.UUID, key string) error {
	resp, err := echo.UnwrapResponse(c.Response())
	if err != nil {
		return err
	}
	rec := &capture{ResponseWriter: resp.ResponseWriter}
	resp.ResponseWriter = rec
	answered := false
	// Whatever happens (a panic included), the key must not stay held:
	// kept with the answer, or released so that a repeat runs again.
	defer func() {
		resp.ResponseWriter = rec.ResponseWriter
		settle := func(ctx context.Context) error { return s.store.ReleaseIdempotencyKey(ctx, owner, key) }
		if body, ok := keptBody(c, resp.Status, rec.body.Bytes()); answered && ok {
			kept := store.StoredResponse{Status: resp.Status, ContentType: resp.Header().Get(echo.HeaderContentType),
				Location: resp.Header().Get(echo.HeaderLocation), Body: body}
			settle = func(ctx context.Context) error { return s.store.SaveIdempotentResponse(ctx, owner, key, kept) }
		} else if u, ok := c.Get(unsureKey).(unsureAnswer); ok {
			settle = func(ctx context.Context) error { return s.settleUnsure(ctx, owner, key, u) }
		}
		s.settleKey(context.WithoutCancel(c.Request().Context()), settle)
	}()
	if err := next(c); err != nil {
		s.handleError(c, err)
	}
	answered = true
	return nil
}

// settleKey keeps a request's answer under its key, or releases the key,
// with settle. When Postgres fails it (an outage that began during the
// request), it is tried again in the background for up to keySettleFor,
// so that the key is settled within a second or so of the store's return:
// left held, every repeat of the request would be refused with a 409 until
// the key counted as abandoned (2 minutes), and an answer left unsaved
// could let a repeat after that run the request twice. At most
// maxSettling keys wait so at a time; beyond, a key is left to be
// abandoned, as before.
func (s *Server) settleKey(ctx context.Context, settle func(context.Context) error) {
	try := func() error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return settle(ctx)
	}
	err := try()
	if err == nil {
		return
	}
	select {
	case s.settling <- struct{}{}:
	default:
		s.log.Warn("idempotency_key_not_settled", zap.Error(err))
		return
	}
	s.log.Warn("idempotency_key_settle_retrying", zap.Error(err))
	go func() {
		defer func() { <-s.settling }()
		deadline := s.clock().Add(keySettleFor)
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
			time.Sleep(wait)
			if err = try(); err == nil {
				return
			}
			if s.clock().After(deadline) {
				s.log.Warn("idempotency_key_not_settled", zap.Error(err))
				return
			}
		}
	}()
}

// unsureKey names, on the echo context, the answer to keep under an
// Idempotency-Key should the jobs of a create whose commit went unanswered
// turn out to be stored (keepIfStored).
const unsureKey = "tock.idempotency.unsure"

// unsureAnswer is a create's answer, had its commit been answered.
type unsureAnswer struct {
	create *lifecycle.UnsureError
	status int
	body   []byte
}

// errCreateUnsure: the create's jobs are still being looked for.
var errCreateUnsure = errors.New("the create's commit is not settled yet")

// keepIfStored, after a create failed with err, gives the answer (status,
// v) its request would have had: if err says Postgres never answered the
// commit (a *lifecycle.UnsureError), the create's key is settled once
// that is known, kept with this answer if the jobs were stored, so that a
// repeat under the key gets the jobs made instead of making them twice,
// and released if they were not.
func keepIfStored(c *echo.Context, err error, status int, v any) {
	var u *lifecycle.UnsureError
	if !errors.As(err, &u) {
		return
	}
	if body, merr := json.Marshal(v); merr == nil {
		c.Set(unsureKey, unsureAnswer{create: u, status: status, body: body})
	}
}

// settleUnsure settles key, held by a create whose commit went unanswered,
// once the create's jobs were looked for (errCreateUnsure until then, for
// settleKey to try again). Should that be unknown still, the key stays
// held: abandoned after 2 minutes, its repeat then runs, as after a
// dashboard that died.
func (s *Server) settleUnsure(ctx context.Context, owner uuid.UUID, key string, u unsureAnswer) error {
	select {
	case <-u.create.Done():
	default:
		return errCreateUnsure
	}
	switch stored, known := u.create.Stored(); {
	case !known:
		return nil
	case stored:
		return s.store.SaveIdempotentResponse(ctx, owner, key,
			store.StoredResponse{Status: u.status, ContentType: echo.MIMEApplicationJSON, Body: u.body})
	}
	return s.store.ReleaseIdempotencyKey(ctx, owner, key)
}

const (
	// keySettleFor is well inside the 2 minutes after which a held key
	// counts as abandoned and may be claimed by a repeat.
	keySettleFor = time.Minute
	maxSettling  = 4096
)

// final says whether an answer is worth replaying for a day. A 429 is not:
// it says "not yet", its Retry-After would be stale on replay, and clients
// (the SDK, the CLI) repeat it with the same key once that time has passed.
// Nor is a server error (5xx): the request may well succeed when repeated.
func final(status int) bool {
	return status != http.StatusTooManyRequests && status < 500
}

// keptKey names, on the echo context, the body a handler gives to keep
// under an Idempotency-Key in place of the one it sends (keepRedacted).
const keptKey = "tock.idempotency.kept"

// redacted is the body to keep, and replay, in place of an answer that holds
// a secret, and the status of the answer it stands for.
type redacted struct {
	status int
	body   []byte
}

// keepRedacted marks the answer a handler is about to send as holding a
// secret, and gives the body to keep in its place: the key's answer stays in
// idempotency_keys for a day, where anyone who reads the database would
// find it, and a secret is never stored in clear. A replay then answers body
// with the status sent. Any route may use it; writeSecretJSON does for JSON.
func keepRedacted(c *echo.Context, status int, body []byte) {
	c.Set(keptKey, redacted{status: status, body: body})
}

// writeSecretJSON answers v, which holds a secret, and gives kept to keep
// under an Idempotency-Key in its place: v with each secret replaced by its
// fingerprint (secretFingerprint), saying that a replay does not repeat it.
func writeSecretJSON(c *echo.Context, status int, v, kept any) error {
	body, err := json.Marshal(kept)
	if err != nil {
		return err
	}
	keepRedacted(c, status, body)
	return writeJSON(c, status, v)
}

// secretFingerprint stands for a secret in a kept answer: "secret:sha256:"
// and the first 16 bytes of its SHA-256, in hex. It tells one secret from
// another (a client may compare it with the secret it holds) and reveals
// nothing of a random one such as a signing secret (32 random bytes); a
// guessable value would need a keyed hash instead.
func secretFingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "secret:sha256:" + hex.EncodeToString(sum[:16])
}

// keptBody is what an Idempotency-Key keeps of an answer with status whose
// body was sent: nothing (false) unless the answer is final; the redacted
// body if the handler gave one. A handler that marked a secret and then
// answered another status (an error after all) keeps nothing either: what
// it sent is not known to be free of the secret, so the key is released.
func keptBody(c *echo.Context, status int, sent []byte) ([]byte, bool) {
	if !final(status) {
		return nil, false
	}
	r, marked := c.Get(keptKey).(redacted)
	switch {
	case !marked:
		return sent, true
	case r.status != status:
		return nil, false
	}
	return r.body, true
}

// checkIdempotencyKey accepts 1 to 255 printable ASCII characters.
func checkIdempotencyKey(key string) error {
	if len(key) == 0 || len(key) > maxIdempotencyKey {
		return apierr.Invalid(idempotencyHeader, "must be 1 to 255 printable characters")
	}
	for i := range len(key) {
		if key[i] < 0x20 || key[i] > 0x7e {
			return apierr.Invalid(idempotencyHeader, "must be 1 to 255 printable characters (ASCII 0x20-0x7E)")
		}
	}
	return nil
}

// capture passes a response through and keeps a copy of its body.
type capture struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (w *capture) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *capture) Unwrap() http.ResponseWriter { return w.ResponseWriter }
