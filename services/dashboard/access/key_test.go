package access

import (
	"crypto/sha256"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewKey mints keys shaped tock_<13 base32>_<43 base64url>, whose
// prefix finds the row and whose SHA-256 is what is stored.
func TestNewKey(t *testing.T) {
	t.Parallel()
	key, prefix, hash := newKey()
	require.Regexp(t, `^tock_[a-z2-7]{13}_[A-Za-z0-9_-]{43}$`, key)
	require.Equal(t, "tock_"+prefix+"_", key[:len("tock_")+13+1])
	sum := sha256.Sum256([]byte(key))
	require.Equal(t, sum[:], hash)
	got, ok := splitKey(key)
	require.True(t, ok)
	require.Equal(t, prefix, got)
	require.True(t, Minted(key))

	again, _, _ := newKey()
	require.NotEqual(t, key, again)
}

// TestSplitKey finds the prefix of anything shaped like a key, and refuses
// the rest without a lookup: in particular any byte outside base32's
// lower-case alphabet, which must not reach Postgres.
func TestSplitKey(t *testing.T) {
	t.Parallel()
	prefix, ok := splitKey("tock_abcdefghijk27_secret")
	require.True(t, ok)
	require.Equal(t, "abcdefghijk27", prefix)
	for _, bad := range []string{
		"",
		"tock_",
		"tock_short_secret",
		"tock_aaaaaaaaaaaaa_",       // no secret
		"tock_aaaaaaaaaaaaa",        // no separator
		"tock_aaaaaaaaaaaaaa_x",     // a prefix too long
		"tock_AAAAAAAAAAAAA_x",      // upper case
		"tock_aaaaaaaaaaaa1_x",      // 1 is not base32
		"tock_aaaaaaaaaaaa\xff_x",   // not UTF-8
		"TOCK_aaaaaaaaaaaaa_x",      // the scheme is lower case
		"tses_aaaaaaaaaaaaa_x",      // a session's scheme
		"Bearer tock_aaaaaaaaaaaaa", // a header, not a token
	} {
		_, ok := splitKey(bad)
		require.False(t, ok, "%q", bad)
	}
}
