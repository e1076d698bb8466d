package jobtype_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/outbound"
)

// TestCheckURLReadsHostsAsTheDialerDoes refuses at creation every spelling
// of a private address that the connect-time guard would refuse, and a
// misspelt host or port that could never be called, with a field error.
func TestCheckURLReadsHostsAsTheDialerDoes(t *testing.T) {
	t.Parallel()
	strict := outbound.Options{}
	for _, raw := range []string{
		"http://0x7f000001/", "http://2130706433/", "http://127.1/", "http://0177.0.0.1/",
		"http://127.000.000.001/", "http://0/", "http://127。0。0。1/", "http://127．0．0．1/",
		"http://0xa9fea9fe/latest/meta-data/", "http://169.254.169.254./", "http://[::ffff:7f00:1]/",
		"http://ｌｏｃａｌｈｏｓｔ/", "https://10.1/", "http://0x0a.0x01.0x02.0x03/",
		// Every inet_aton spelling of 127.0.0.1 and of 169.254.169.254.
		"http://127.0.1/", "http://0x7f.1/", "http://0x7f.0.0x1/", "http://017700000001/",
		"http://2852039166/", "http://0xa9fea9fe/", "http://0xa9.0xfe.0xa9.0xfe/", "http://169.254.43518/",
		"http://169.16689662/", "http://0251.0376.0251.0376/", "http://0251.0xfe.43518/", "http://169.254.169.254/",
	} {
		err := jobtype.CheckURL("payload.url", raw, strict)
		require.Error(t, err, raw)
		var fe *job.FieldError
		require.True(t, errors.As(err, &fe), raw)
		require.Equal(t, "payload.url", fe.Field, raw)
		require.Contains(t, fe.Message, "address, which tock does not call", raw)
	}
	for raw, why := range map[string]string{
		"http://host:99999/":      "a port is 1 to 65535",
		"http://example.com:0/":   "a port is 1 to 65535",
		"http://1.2.3.256/":       "not a valid IPv4 address",
		"http://93.184.215.14.5/": "not a valid IPv4 address",
		"http://example.123/":     "not a valid IPv4 address",
		"http://-example.com/":    "not a valid host name",
		"http://a..b/":            "not a valid host name",
	} {
		err := jobtype.CheckURL("payload.webhook_url", raw, strict)
		require.Error(t, err, raw)
		require.Contains(t, err.Error(), why, raw)
	}
	for _, raw := range []string{
		"https://example.com/hook", "http://93.184.215.14:8080/", "http://bücher.example/",
		"http://[2606:4700::1111]/", "https://hooks.slack.com/services/T/B/X", "http://a_b.example.com/",
	} {
		require.NoError(t, jobtype.CheckURL("payload.url", raw, strict), raw)
	}
	// An operator who allows private targets allows them in every spelling.
	require.NoError(t, jobtype.CheckURL("payload.url", "http://127.1:8080/", outbound.Options{AllowPrivate: true}))
}

// TestHeadersAsTheClientSendsThem refuses at creation a header the HTTP
// client would refuse to send, which would fail every run.
func TestHeadersAsTheClientSendsThem(t *testing.T) {
	t.Parallel()
	check := func(headers map[string]string) error {
		raw, err := json.Marshal(map[string]any{"url": "https://example.com/hook", "headers": headers})
		require.NoError(t, err)
		_, err = jobtype.Validate(jobtype.TypeWebhook, raw, 0, outbound.Options{})
		return err
	}
	for _, h := range []map[string]string{
		{"X-Tab\tName": "v"}, {"X-\x01": "v"}, {"X-Näme": "v"}, {"X Space": "v"}, {"X:Colon": "v"}, {"": "v"},
		{"X-Ok": "a\x00b"}, {"X-Ok": "a\x7fb"}, {"X-Ok": "line\nbreak"}, {"X-Ok": "a\x1bb"},
	} {
		err := check(h)
		require.Error(t, err, "%q", h)
		require.Contains(t, err.Error(), "payload.headers", "%q", h)
	}
	require.NoError(t, check(map[string]string{"X-Ok": "tab\tinside is fine", "X-Token_1!": "ü is sent as bytes"}))
}
