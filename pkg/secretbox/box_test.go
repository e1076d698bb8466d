package secretbox_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/secretbox"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, secretbox.KeySize) }

func TestBox(t *testing.T) {
	t.Parallel()
	alice, bob := []byte("alice-uuid-bytes"), []byte("bob-uuid-bytes--")
	b, err := secretbox.New(key(1))
	require.NoError(t, err)
	sealed, err := b.Seal("s3cr3t", alice)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(sealed, "enc:v1:"+secretbox.KeyID(key(1))+":"))
	require.NotContains(t, sealed, "s3cr3t")
	again, _ := b.Seal("s3cr3t", alice)
	require.NotEqual(t, sealed, again, "a fresh nonce each time")

	got, err := b.Open(sealed, alice)
	require.NoError(t, err)
	require.Equal(t, "s3cr3t", got)
	_, err = b.Open(sealed, bob)
	require.Error(t, err, "bound to its owner")
	// A character well inside the ciphertext, changed to another: the last
	// characters of unpadded base64 may carry bits a decoder ignores, so
	// changing those could leave the bytes as they were (1 run in ~256).
	i := len(sealed) - 8
	c := byte('A')
	if sealed[i] == c {
		c = 'B'
	}
	tampered := sealed[:i] + string(c) + sealed[i+1:]
	_, err = b.Open(tampered, alice)
	require.Error(t, err)

	plain, err := b.Open("legacy-plain", alice)
	require.NoError(t, err)
	require.Equal(t, "legacy-plain", plain, "values from before encryption read as they are")
	require.False(t, b.Current("legacy-plain"))
	require.True(t, b.Current(sealed))

	// Rotating the operator key: the new box opens the old values, and
	// knows they are to be resealed.
	rotated, err := secretbox.New(key(2), key(1))
	require.NoError(t, err)
	got, err = rotated.Open(sealed, alice)
	require.NoError(t, err)
	require.Equal(t, "s3cr3t", got)
	require.False(t, rotated.Current(sealed))

	// Without the key, a sealed value does not open, and says why.
	_, err = (&secretbox.Box{}).Open(sealed, alice)
	require.True(t, errors.Is(err, secretbox.ErrNoKey))
	none, err := secretbox.New(nil)
	require.NoError(t, err)
	same, err := none.Seal("x", alice)
	require.NoError(t, err)
	require.Equal(t, "x", same, "no key: stored as it is")

	_, err = secretbox.New([]byte("short"))
	require.Error(t, err)
	k, err := secretbox.ParseKey("AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=")
	require.NoError(t, err)
	require.Equal(t, key(1), k)
	_, err = secretbox.ParseKey("c2hvcnQ=")
	require.ErrorContains(t, err, "32")
}
