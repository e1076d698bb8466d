package access

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"errors"

	"go.uber.org/zap"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// credential is the one check of a token, shared by the API and the sign-in
// of the browser dashboard: nil if it is neither the admin token nor a live
// key of an enabled user. Every comparison is of SHA-256 digests in
// constant time, so that neither a token's content nor its length leaks
// through timing.
func (a *Control) credential(ctx context.Context, token string) (*Principal, error) {
	if token == "" {
		return nil, nil
	}
	got := sha256.Sum256([]byte(token))
	admin := sha256.Sum256(a.token)
	if len(a.token) > 0 && subtle.ConstantTimeCompare(got[:], admin[:]) == 1 {
		return adminPrincipal(), nil
	}
	p, err := a.keyPrincipal(ctx, token, got[:])
	if p != nil {
		a.gate.Passed(got)
	}
	return p, err
}

// keyPrincipal authenticates an API key: nil if it is not one, unknown,
// revoked, expired, or its user is disabled.
func (a *Control) keyPrincipal(ctx context.Context, token string, hash []byte) (*Principal, error) {
	prefix, ok := splitKey(token)
	if !ok {
		return nil, nil
	}
	cred, err := a.store.Credential(ctx, prefix)
	if errors.Is(err, job.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Dependency(err)
	}
	if subtle.ConstantTimeCompare(hash, cred.Hash) != 1 {
		return nil, nil
	}
	return a.keyHolder(ctx, &cred.Key, &cred.User), nil
}

// keyHolder is who a found key acts as, whether it came as a bearer token
// or through the session it opened: nil if it is revoked or expired or its
// user is disabled, so that these end a session exactly as they end the key.
func (a *Control) keyHolder(ctx context.Context, k *store.Key, u *store.User) *Principal {
	now := a.clock()
	if !k.Live(now) || !u.DisabledAt.IsZero() {
		return nil
	}
	if now.Sub(k.LastUsedAt) >= store.KeyTouchInterval {
		if err := a.store.TouchKey(ctx, k.ID, now); err != nil {
			// The key is valid; a missed last_used_at refresh is not worth a failed request.
			a.log.Warn("touch_key_failed", zap.Stringer("key_id", k.ID), zap.Error(err))
		}
	}
	scopes := KeyScopes(k, u.Role)
	return &Principal{User: u.ID, Admin: scopes&canAdmin != 0, Limits: u.Limits, Scopes: scopes,
		expires: k.ExpiresAt, key: k.ID}
}

// sessionPrincipal authenticates a session id from the cookie: nil if it is
// not one, unknown or expired, or if what opened it no longer authenticates
// (its key revoked or expired, its user disabled, or, for a session of the
// admin token, another TOCK_ADMIN_TOKEN now). The lookup is one round trip,
// by the SHA-256 of the id.
func (a *Control) sessionPrincipal(ctx context.Context, id string) (*Principal, error) {
	if !sessionShaped(id) {
		return nil, nil
	}
	sum := sha256.Sum256([]byte(id))
	sc, err := a.store.SessionCredential(ctx, sum[:], a.clock())
	if errors.Is(err, job.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, apierr.Dependency(err)
	}
	var p *Principal
	switch {
	case sc.Key != nil:
		p = a.keyHolder(ctx, sc.Key, &sc.User)
	case len(a.token) > 0 && sc.User.ID == store.BootstrapAdmin && hmac.Equal(adminBinding(a.token, id), sc.Session.AdminBinding):
		p = adminPrincipal()
	}
	if p != nil {
		a.gate.Passed(sum)
	}
	return p, nil
}

// Minted reports whether a token is shaped like a credential tock mints (a
// key, a session id): past a blocked address, only those are worth asking
// Redis about (guard.Deps.Minted).
func Minted(token string) bool {
	_, ok := splitKey(token)
	return ok || sessionShaped(token)
}
