package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/tockhq/tock/pkg/jobspec"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/access"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// rotateRoute is the path of POST /api/v1/signing-secret:rotate (echo reads
// an unescaped colon as a parameter).
const rotateRoute = `/api/v1/signing-secret\:rotate`

// DefaultSigningGrace is how long a rotated-out signing secret keeps
// signing by default, and MaxSigningGrace the most a caller may ask.
const (
	DefaultSigningGrace = 24 * time.Hour
	MaxSigningGrace     = 30 * 24 * time.Hour
)

// SigningSecret is the answer of GET /api/v1/signing-secret and of a
// rotation: the current secret, and until when the previous one still signs
// (null when none does). A rotation's replay under its Idempotency-Key holds
// the secret's fingerprint instead, and Note says where the secret is.
type SigningSecret struct {
	Secret             string `json:"secret"`
	Header             string `json:"header"`
	Scheme             string `json:"scheme"`
	PreviousValidUntil Time   `json:"previous_valid_until"`
	Note               string `json:"note,omitempty"`
}

// rotationReplayed is the Note of a rotation's replay.
const rotationReplayed = "This repeats the answer to an earlier request with the same Idempotency-Key. " +
	"A replay does not repeat the secret: secret holds its fingerprint (secret:sha256: and the first 32 hex digits of its SHA-256). " +
	"GET /api/v1/signing-secret shows the secret."

const signingScheme = "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\">[,v1=<same under the previous secret, during a rotation's grace period>]"

// signingSecret answers the caller's webhook signing secret, which receivers
// need to verify X-Tock-Signature (docs/webhooks.md). It is only ever sent to
// its owner and never logged.
func (s *Server) signingSecret(c *echo.Context) error {
	sec, err := s.store.SigningSecrets(c.Request().Context(), access.Caller(c).User, s.now())
	if err != nil {
		return apierr.Dependency(err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return writeJSON(c, http.StatusOK, SigningSecret{Secret: sec.Current, Header: "X-Tock-Signature", Scheme: signingScheme,
		PreviousValidUntil: Time{sec.PreviousUntil}})
}

// rotateSigningSecret gives the caller a new signing secret. The old one
// keeps signing, next to the new, for the grace period ({"grace": "24h"} by
// default, "0s" for none, at most 30 days), so receivers can switch over
// without refusing a delivery.
func (s *Server) rotateSigningSecret(c *echo.Context) error {
	var req struct {
		Grace *string `json:"grace"`
	}
	if c.Request().ContentLength != 0 {
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
	}
	grace := DefaultSigningGrace
	if req.Grace != nil {
		d, err := jobspec.ParseDelay(*req.Grace)
		if *req.Grace == "0" || *req.Grace == "0s" {
			d, err = 0, nil
		}
		if err != nil || d < 0 || d > MaxSigningGrace {
			return apierr.Invalid("grace", "must be a duration from 0s to "+strconv.Itoa(int(MaxSigningGrace/(24*time.Hour)))+"d, such as 24h")
		}
		grace = d
	}
	p := access.Caller(c)
	sec, err := s.store.RotateSigningSecret(c.Request().Context(), p.User, s.now(), grace, p.Audit(store.ActionSigningRotate))
	if err != nil {
		return apierr.Dependency(err)
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	out := SigningSecret{Secret: sec.Current, Header: "X-Tock-Signature", Scheme: signingScheme,
		PreviousValidUntil: Time{sec.PreviousUntil}}
	kept := out
	kept.Secret, kept.Note = secretFingerprint(sec.Current), rotationReplayed
	return writeSecretJSON(c, http.StatusOK, out, kept)
}
