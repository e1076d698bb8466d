package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tockhq/tock/pkg/store"
	"github.com/tockhq/tock/services/dashboard/apierr"
)

// An API key reads tock_<prefix>_<secret>: the prefix (13 characters of
// lower-case base32) is public and finds the key's row; the secret is 32
// random bytes, base64url. Only the SHA-256 of the whole key is stored: the
// key is random enough that a slow hash would add nothing but latency.
const keyScheme = "tock_"

var prefixEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newKey returns a fresh key, its prefix and its hash.
func newKey() (key, prefix string, hash []byte) {
	var p [8]byte
	var secret [32]byte
	_, _ = rand.Read(p[:]) // crypto/rand.Read never fails
	_, _ = rand.Read(secret[:])
	prefix = strings.ToLower(prefixEncoding.EncodeToString(p[:]))
	key = keyScheme + prefix + "_" + base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(key))
	return key, prefix, sum[:]
}

// splitKey returns the prefix of a string shaped like a key.
func splitKey(token string) (prefix string, ok bool) {
	rest, ok := strings.CutPrefix(token, keyScheme)
	if !ok {
		return "", false
	}
	prefix, secret, ok := strings.Cut(rest, "_")
	if !ok || len(prefix) != 13 || secret == "" {
		return "", false
	}
	// Only base32's lower-case alphabet: anything else names no key, and
	// must not reach Postgres (a byte that is not UTF-8 would fail the query).
	for i := 0; i < len(prefix); i++ {
		if c := prefix[i]; (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return "", false
		}
	}
	return prefix, true
}

// Mint stores a new key as k describes, its prefix filled in, for at most
// maxKeys live keys of its user (0: no cap), and returns the key, shown
// this once, and the stored row. Store errors come back as they are
// (store.ErrTooManyKeys, job.ErrNotFound for an unknown user), for the
// handler to answer.
func (a *Control) Mint(ctx context.Context, k *store.Key, maxKeys int, audit store.Audit) (string, *store.Key, error) {
	key, prefix, hash := newKey()
	k.Prefix = prefix
	out, err := a.store.CreateKey(ctx, k, hash, maxKeys, audit)
	if err != nil {
		return "", nil, err
	}
	// The key's first requests may come from an address blocked for
	// someone else's bad tokens (a NAT, a CI runner's egress), to any
	// dashboard: each must let it through before it has seen it succeed.
	a.gate.Vouch(ctx, [32]byte(hash))
	return key, out, nil
}

// MaxKeyLifetime bounds a key's expires_at.
const MaxKeyLifetime = 10 * 366 * 24 * time.Hour

// Grant checks the scopes and expiry a new key asks for (scopes: nil for
// everything the role allows; expiresAt: an RFC 3339 time, nil for none),
// for a user of role, made by p at now: a key never gets a scope its user's
// role does not allow, nor one its creator's own key lacks, and never
// outlives its creator's key. It returns the scopes to store (nil:
// everything the role allows) and the expiry (zero: none).
func (p Principal) Grant(role string, scopes *[]string, expiresAt *string, now time.Time) ([]string, time.Time, error) {
	var names []string
	if scopes != nil {
		if len(*scopes) == 0 {
			return nil, time.Time{}, apierr.Invalid("scopes", "must name at least one scope: "+strings.Join(allScopeNames(), ", "))
		}
		set, bad := parseScopes(*scopes)
		if bad >= 0 {
			return nil, time.Time{}, apierr.Invalid("scopes["+strconv.Itoa(bad)+"]", "is not a scope: "+strings.Join(allScopeNames(), ", "))
		}
		if extra := set &^ roleScopes(role); extra != 0 {
			return nil, time.Time{}, apierr.Invalid("scopes", "names "+strings.Join(extra.Names(), ", ")+", which a "+role+" cannot have")
		}
		names = set.Names()
	}
	granted := roleScopes(role)
	if names != nil {
		granted, _ = parseScopes(names)
	}
	if extra := granted &^ p.Scopes; extra != 0 {
		return nil, time.Time{}, apierr.New(http.StatusForbidden, apierr.CodeForbidden, "scopes",
			"your key lacks "+strings.Join(extra.Names(), ", ")+", so it cannot give it; name the scopes the new key needs")
	}
	var expires time.Time
	if expiresAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *expiresAt)
		switch {
		case err != nil:
			return nil, time.Time{}, apierr.Invalid("expires_at", "must be an RFC 3339 time, such as 2030-01-02T15:04:05Z")
		case !t.After(now):
			return nil, time.Time{}, apierr.Invalid("expires_at", "must be in the future")
		case t.Sub(now) > MaxKeyLifetime:
			return nil, time.Time{}, apierr.Invalid("expires_at", "must be within 10 years")
		}
		expires = t.UTC()
	}
	// A key cannot outlive the key that made it: without expires_at it
	// ends with its creator, and a later one is refused.
	if !p.expires.IsZero() {
		switch {
		case expires.IsZero():
			expires = p.expires
		case expires.After(p.expires):
			return nil, time.Time{}, apierr.New(http.StatusForbidden, apierr.CodeForbidden, "expires_at",
				"your key expires at "+p.expires.Format(time.RFC3339)+", so a key it makes must expire no later")
		}
	}
	return names, expires, nil
}

// MayRevoke refuses, with 403, a user's revoking k, one of their own keys,
// with a key that lacks some of k's scopes: a narrowed key could otherwise
// take away the keys that can undo what it does.
func (p Principal) MayRevoke(k *store.Key) error {
	if extra := KeyScopes(k, store.RoleUser) &^ p.Scopes; extra != 0 {
		return apierr.New(http.StatusForbidden, apierr.CodeForbidden, "",
			"that key has "+strings.Join(extra.Names(), ", ")+", which your key lacks, so your key cannot revoke it")
	}
	return nil
}
