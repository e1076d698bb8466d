package strictjson_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/jobtype"
	"github.com/tockhq/tock/pkg/strictjson"
)

type strictInner struct {
	X int    `json:"x"`
	Y string `json:"y,omitempty"`
}

type strictEmbedded struct {
	strictInner
	Z int `json:"z"`
}

type strictOuter struct {
	URL     string            `json:"url"`
	Count   int               `json:"count"`
	Headers map[string]string `json:"headers"`
	Inner   *strictInner      `json:"inner"`
	Value   strictInner       `json:"value"`
	Items   []strictInner     `json:"items"`
	At      time.Time         `json:"at"`
	Raw     json.RawMessage   `json:"raw"`
	Any     any               `json:"any"`
	Tags    []string          `json:"tags"`
	Skipped string            `json:"-"`
	hidden  string
}

// decoder is what Strict must agree with: a json.Decoder that refuses
// unknown fields, reading raw's first value.
func decoder(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

var strictCases = []string{
	`{"url":"http://a.io/","count":3}`,
	`{"URL":"http://a.io/","Count":3}`,
	`{"url":"x","unknown":1}`,
	`{"ur\u006c":"x"}`,
	`{"urł":"x"}`,
	`{"url":"x","inner":{"x":1,"y":"z"}}`,
	`{"url":"x","inner":{"x":1,"w":2}}`,
	`{"inner":null,"value":{"X":1}}`,
	`{"value":{"x":1,"nope":true}}`,
	`{"items":[{"x":1}]}`,
	`{"items":[{"x":1,"w":2}]}`,
	`{"headers":{"a":"b","anything":"c"}}`,
	`{"headers":{"a":1}}`,
	`{"at":"2030-01-02T15:04:05Z"}`,
	`{"at":"tomorrow"}`,
	`{"raw":{"free":{"form":1}},"any":{"also":[1,{"free":2}]}}`,
	`{"count":"3"}`,
	`{"count":1.5}`,
	`{"tags":["a","b"]}`,
	`{"Skipped":"x"}`,
	`{"-":"x"}`,
	`{"hidden":"x"}`,
	`{"url":"a","url":"b"}`,
	`{}`,
	`null`,
	`[]`,
	`"x"`,
	`{"url":"x"} {"url":"y"}`,
	`{"url":"x"`,
	` {"url" : "x" } `,
	`{"url": "x", "raw": null}`,
	`{"url":"x","raw":[1, {"a":"b"}],"URL":"y"}`,
	`{"raw":"s\"t","url":"é"}`,
	`{"raw":}`,
	`{"raw":[1,}`,
	`{"url":"x",}`,
	`{"url":"x" "count":1}`,
	`{"url":"x"}}`,
	`{"url":"a\u0062"}`,
	`{"Krl":"x"}`,
	"{\"url\":\"a\tb\"}",
	"{\"url\":\"\xff\"}",
	`{"tags":null,"url":"x"}`,
	`{"url":"1","count":2,"tags":["a"],"raw":{}}`,
}

// Strict must read every input as a Decoder refusing unknown fields does,
// and UnmarshalFlat as json.Unmarshal does: the same value, the same error.
func TestStrictAgreesWithADecoder(t *testing.T) {
	t.Parallel()
	for _, raw := range strictCases {
		agree(t, raw, decoder, strictjson.Strict, new(strictOuter), new(strictOuter))
	}
	// A struct with an embedded one is read by the Decoder alone.
	for _, raw := range []string{`{"x":1,"z":2}`, `{"x":1,"w":2}`} {
		agree(t, raw, decoder, strictjson.Strict, new(strictEmbedded), new(strictEmbedded))
	}
}

func TestUnmarshalFlatAgreesWithUnmarshal(t *testing.T) {
	t.Parallel()
	for _, raw := range strictCases {
		agree(t, raw, json.Unmarshal, strictjson.UnmarshalFlat, new(strictOuter), new(strictOuter))
	}
}

func FuzzStrict(f *testing.F) {
	for _, raw := range strictCases {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		agree(t, raw, decoder, strictjson.Strict, new(strictOuter), new(strictOuter))
	})
}

func FuzzUnmarshalFlat(f *testing.F) {
	for _, raw := range strictCases {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		agree(t, raw, json.Unmarshal, strictjson.UnmarshalFlat, new(strictOuter), new(strictOuter))
	})
}

// agree reads raw with the reference and with fast, into want and got,
// and requires the same error, or the same value.
func agree(t *testing.T, raw string, reference, fast func([]byte, any) error, want, got any) {
	t.Helper()
	wantErr := reference([]byte(raw), want)
	gotErr := fast([]byte(raw), got)
	if wantErr != nil {
		require.EqualError(t, gotErr, wantErr.Error(), raw)
		return
	}
	require.NoError(t, gotErr, raw)
	require.Equal(t, want, got, raw)
}

// A webhook's payload as Postgres's jsonb gives it back to a worker (the
// bench's burst job): UnmarshalFlat against json.Unmarshal.
var webhookRaw = []byte(`{"url": "http://127.0.0.1:39123/hook", "body": {"seq": 1012345}, "method": "POST"}`)

func BenchmarkPayload(b *testing.B) {
	b.Run("UnmarshalFlat", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p jobtype.WebhookPayload
			if err := strictjson.UnmarshalFlat(webhookRaw, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p jobtype.WebhookPayload
			if err := json.Unmarshal(webhookRaw, &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
