package jobtype

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/outbound"
)

// Bounds of reading a response. The part of the body beyond OutputLimit is
// drained up to drainLimit so the connection goes back to the pool; a larger
// rest is not worth reading and the connection is closed instead.
const (
	drainLimit = 64 << 10
	// excerptLimit bounds the body excerpt in the Error of a non-2xx outcome;
	// Output holds the longer part.
	excerptLimit = 512
)

// scheduledForLayout is RFC 3339 with milliseconds, the precision of schedules.
const scheduledForLayout = "2006-01-02T15:04:05.000Z07:00"

// Headers tock sets on every request. They are set after the payload's own
// headers, so a payload cannot override them.
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerJobID          = "X-Tock-Job-Id"
	headerScheduledFor   = "X-Tock-Scheduled-For"
	headerNominalTime    = "X-Tock-Nominal-Time"
	headerBackfill       = "X-Tock-Backfill"
	headerAttempt        = "X-Tock-Attempt"
	headerUserAgent      = "User-Agent"
)

// userAgent is the User-Agent of tock version v.
func userAgent(v string) string {
	if v == "" {
		return "tock"
	}
	return "tock/" + v
}

// setTockHeaders sets the headers that identify the attempt to the target,
// and its signature over body when the owner has a signing secret.
func setTockHeaders(h http.Header, t Task, ua string, body []byte) {
	if t.SigningSecret != "" {
		h.Set(headerSignature, Sign(t.SigningSecret, time.Now(), body, t.PreviousSigningSecret))
	}
	for k, v := range tockHeaders(t) {
		h.Set(k, v)
	}
	h.Set(headerUserAgent, ua)
}

// withTimeout bounds ctx by the task's timeout as well, in case the caller's
// deadline is later or missing, and returns the limit to name in a timeout
// error: the task's timeout, which is what the user set and what the caller's
// deadline is derived from, or the caller's budget if the task has none.
func withTimeout(ctx context.Context, t Task, start time.Time) (context.Context, context.CancelFunc, time.Duration) {
	if t.Timeout > 0 {
		ctx, cancel := context.WithTimeout(ctx, t.Timeout)
		return ctx, cancel, t.Timeout
	}
	var limit time.Duration
	if dl, ok := ctx.Deadline(); ok {
		limit = dl.Sub(start).Round(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(ctx)
	return ctx, cancel, limit
}

// do sends req (whose context is ctx) and turns what happens into an Outcome: a
// 2xx status is success; Output is the start of the body, at most OutputLimit
// bytes. The status decides, unless the attempt's deadline cut the body: a 2xx
// whose body cannot be read in full (the connection reset) is still a success,
// because the target has accepted the request, but one whose body was still
// coming at the timeout is a timeout (cutByDeadline). Latency runs from
// sending the request to reading the kept part of the body.
//
// With keep (Task.KeepAnswer) it reads up to AnswerLimit bytes of the body,
// and returns them with the status and headers in Outcome.Answer.
func do(ctx context.Context, client *http.Client, req *http.Request, start time.Time, limit time.Duration, want expect, keep bool) Outcome {
	resp, err := client.Do(req)
	if err != nil {
		return Outcome{Latency: time.Since(start), Error: describe(ctx, err, limit)}
	}
	read := OutputLimit
	if keep {
		read = AnswerLimit
	}
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, int64(read)+1))
	latency := time.Since(start)
	if readErr == nil && len(body) > read {
		// Only a small rest is drained; io.CopyN stops at the cap either way.
		_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	}
	_ = resp.Body.Close()

	out := Outcome{StatusCode: resp.StatusCode, Latency: latency, Output: clean(body, OutputLimit)}
	if keep {
		out.Answer = &Answer{Status: resp.StatusCode, Headers: resp.Header, Body: body[:min(len(body), read)], Truncated: len(body) > read}
	}
	body = body[:min(len(body), OutputLimit+1)]
	if cutByDeadline(ctx, readErr) {
		out.Answer = nil // timed out: its answer never came in full
		out.Error = clean([]byte(describe(ctx, readErr, limit)+": status "+strconv.Itoa(resp.StatusCode)+
			", the body was cut after "+strconv.Itoa(len(body))+" bytes"), OutputLimit)
		return out
	}
	statusOK := want.status.Has(resp.StatusCode)
	out.OK = statusOK && (want.body == "" || bytes.Contains(body, []byte(want.body)))
	if statusOK && !out.OK {
		out.Error = "status " + strconv.Itoa(resp.StatusCode) + ": the answer does not contain expect_body"
		return out
	}
	if !out.OK {
		msg := "status " + strconv.Itoa(resp.StatusCode)
		if excerpt := clean(body, excerptLimit); excerpt != "" {
			msg += ": " + excerpt
		}
		if readErr != nil {
			msg += " (reading body: " + describe(ctx, readErr, limit) + ")"
		}
		out.Error = clean([]byte(msg), OutputLimit)
	}
	return out
}

// cutByDeadline says whether the body's read failed because the attempt
// ran out of time: a target that answers at once and then trickles its body
// holds a worker's slot until the timeout, and its answer was never read;
// whatever the status, the attempt timed out. A read cut otherwise (the
// connection reset, the attempt aborted) leaves the status to decide.
func cutByDeadline(ctx context.Context, readErr error) bool {
	return readErr != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// expect is what makes an answer a success: a status in the set and, if body
// is set, that text within the first OutputLimit bytes.
type expect struct {
	status job.StatusSet
	body   string
}

// twoXX is the default expectation: any 2xx answer.
var twoXX = expect{status: job.StatusSet{{200, 299}}}

func expectation(status, body string) (expect, error) {
	set, err := job.ParseStatusSet(status)
	if err != nil {
		return expect{}, err
	}
	return expect{status: set, body: body}, nil
}

// headerSignature carries the request's signature; see Sign.
const headerSignature = "X-Tock-Signature"

// Sign returns the X-Tock-Signature value of a request with body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<unix seconds>.<body>" keyed by the
// owner's signing secret>". A receiver recomputes the HMAC over the timestamp
// and the raw body it received, compares in constant time, and refuses a
// timestamp too far from its clock (docs/webhooks.md shows how).
//
// With more secrets (the previous one, during a rotation's grace period),
// the header carries one v1 per secret, the current first:
// "t=<ts>,v1=<current>,v1=<previous>"; a receiver accepts the request if any
// v1 matches a secret it knows.
func Sign(secret string, t time.Time, body []byte, more ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	out := "t=" + ts
	for _, s := range append([]string{secret}, more...) {
		if s == "" {
			continue
		}
		mac := hmac.New(sha256.New, []byte(s))
		mac.Write([]byte(ts))
		mac.Write([]byte("."))
		mac.Write(body)
		out += ",v1=" + hex.EncodeToString(mac.Sum(nil))
	}
	return out
}

// describe turns a request error into a short message for the run. It never
// includes the URL (its query may carry a token) nor any header value.
func describe(ctx context.Context, err error, limit time.Duration) string {
	var denied *outbound.DeniedError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		if limit > 0 {
			return "timeout after " + limit.String()
		}
		return "timeout"
	case errors.Is(ctx.Err(), context.Canceled):
		return "cancelled before the target answered"
	case errors.As(err, &denied):
		return denied.Error()
	case errors.Is(err, outbound.ErrDenied):
		return outbound.ErrDenied.Error()
	}
	return clean([]byte("request failed: "+requestError(err)), OutputLimit)
}

// requestError is err's text without the URL a *url.Error quotes.
func requestError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// clean returns at most max bytes of b as text that Postgres accepts: valid
// UTF-8 without NUL. Invalid bytes and NUL become U+FFFD; a rune that does not
// fit whole is left out. ASCII passes unchanged.
func clean(b []byte, max int) string {
	var sb strings.Builder
	sb.Grow(min(len(b), max))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(b) && len(b) < utf8.UTFMax {
				// A rune cut by the read limit, not a wrong one.
				break
			}
			r = utf8.RuneError
		}
		if r == 0 {
			r = utf8.RuneError
		}
		if sb.Len()+utf8.RuneLen(r) > max {
			break
		}
		sb.WriteRune(r)
		b = b[size:]
	}
	return sb.String()
}

// failure is an outcome that failed before any request was sent.
func failure(format string, args ...any) Outcome {
	return Outcome{Error: clean([]byte(fmt.Sprintf(format, args...)), OutputLimit)}
}
