// Package secretbox keeps the secrets tock stores for its users (webhook
// signing secrets) encrypted at rest: AES-256-GCM under an operator key
// (TOCK_SECRET_KEY), bound to the row's owner, with the key's id in each
// sealed value so that the operator key itself can be rotated. A database
// dump or a read replica then holds nothing that signs as a customer.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// prefix starts every sealed value: "enc:v1:<key id>:<base64 nonce|ciphertext>".
// A stored value without it is a secret from before encryption (or from a
// deployment without a key), returned as it is.
const prefix = "enc:v1:"

// KeySize is the length of an operator key: AES-256.
const KeySize = 32

// ErrNoKey is Open's error for a value sealed under a key the box does not
// hold (or any key, when the box has none).
var ErrNoKey = errors.New("sealed under an operator key this process does not hold (TOCK_SECRET_KEY, TOCK_SECRET_KEY_PREVIOUS)")

// Box seals under its current key and opens under any of its keys. The zero
// Box (no key) seals nothing: it stores secrets as they are.
type Box struct {
	current string // id of the key Seal uses; "" when none
	keys    map[string]cipher.AEAD
	// mark keys the fingerprints of secrets (Fingerprint): derived from
	// the current key, so that a fingerprint says nothing to whoever
	// lacks the key.
	mark []byte
}

// KeyID names a key without revealing it: the first 4 bytes of its SHA-256.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// New returns a box that seals under current and opens under current and
// previous. current may be nil: then Seal stores plain values and Open
// reads previous keys' values only.
func New(current []byte, previous ...[]byte) (*Box, error) {
	b := &Box{keys: map[string]cipher.AEAD{}}
	add := func(k []byte) (string, error) {
		if len(k) != KeySize {
			return "", fmt.Errorf("an operator key is %d bytes, not %d", KeySize, len(k))
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return "", err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return "", err
		}
		id := KeyID(k)
		b.keys[id] = aead
		return id, nil
	}
	if current != nil {
		id, err := add(current)
		if err != nil {
			return nil, err
		}
		b.current = id
		sum := sha256.Sum256(append([]byte("tock fingerprint v1\x00"), current...))
		b.mark = sum[:]
	}
	for _, k := range previous {
		if _, err := add(k); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// ParseKey reads an operator key written in base64 (standard or URL
// alphabet, padded or not).
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.DecodeString(s); err == nil {
			if len(k) != KeySize {
				return nil, fmt.Errorf("the key is %d bytes; it must be %d (openssl rand -base64 32)", len(k), KeySize)
			}
			return k, nil
		}
	}
	return nil, errors.New("the key is not base64 (openssl rand -base64 32)")
}

// Encrypts reports whether Seal encrypts.
func (b *Box) Encrypts() bool { return b != nil && b.current != "" }

// Seal encrypts secret for owner (the additional data: a value copied to
// another user's row does not open there). Without a current key it
// returns secret as it is.
func (b *Box) Seal(secret string, owner []byte) (string, error) {
	if !b.Encrypts() {
		return secret, nil
	}
	aead := b.keys[b.current]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := aead.Seal(nonce, nonce, []byte(secret), owner)
	return prefix + b.current + ":" + base64.RawStdEncoding.EncodeToString(sealed), nil
}

// Open returns the secret in stored, sealed for owner; a value stored
// before encryption is returned as it is.
func (b *Box) Open(stored string, owner []byte) (string, error) {
	rest, ok := strings.CutPrefix(stored, prefix)
	if !ok {
		return stored, nil
	}
	id, data, ok := strings.Cut(rest, ":")
	if !ok {
		return "", errors.New("a sealed secret is malformed")
	}
	var aead cipher.AEAD
	if b != nil {
		aead = b.keys[id]
	}
	if aead == nil {
		return "", fmt.Errorf("key %s: %w", id, ErrNoKey)
	}
	raw, err := base64.RawStdEncoding.DecodeString(data)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", errors.New("a sealed secret is malformed")
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], owner)
	if err != nil {
		return "", errors.New("a sealed secret does not open: altered, or sealed for another owner")
	}
	return string(plain), nil
}

// Fingerprint is what a view shows in place of a secret of owner's:
// "secret:sha256:" and 32 hex digits, the same for the same value and
// owner, so that a person can tell two values apart, and nothing from which
// the value can be found: an HMAC under a key derived from the operator
// key. Without a key (where secrets are kept in clear anyway) it is a plain
// SHA-256 of the owner and the value.
func (b *Box) Fingerprint(secret string, owner []byte) string {
	var sum []byte
	if b.Encrypts() {
		m := hmac.New(sha256.New, b.mark)
		m.Write(owner)
		m.Write([]byte{0})
		m.Write([]byte(secret))
		sum = m.Sum(nil)
	} else {
		h := sha256.New()
		h.Write(owner)
		h.Write([]byte{0})
		h.Write([]byte(secret))
		sum = h.Sum(nil)
	}
	return "secret:sha256:" + hex.EncodeToString(sum[:16])
}

// CurrentKey is the id of the key Seal uses; "" without one.
func (b *Box) CurrentKey() string {
	if b == nil {
		return ""
	}
	return b.current
}

// Rotating reports whether the box holds keys besides the current one:
// values sealed under them are to be sealed again.
func (b *Box) Rotating() bool { return b.Encrypts() && len(b.keys) > 1 }

// Current reports whether stored is sealed under the current key, so that
// a rewrite pass knows what to reseal: plain values and values under a
// previous key are not.
func (b *Box) Current(stored string) bool {
	if !b.Encrypts() {
		return !strings.HasPrefix(stored, prefix)
	}
	return strings.HasPrefix(stored, prefix+b.current+":")
}
