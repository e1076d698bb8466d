package strictjson_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
}

func TestStrictAgreesWithADecoder(t *testing.T) {
	t.Parallel()
	for _, raw := range strictCases {
		var want, got strictOuter
		wantErr := decoder([]byte(raw), &want)
		gotErr := strictjson.Strict([]byte(raw), &got)
		if wantErr != nil {
			require.EqualError(t, gotErr, wantErr.Error(), raw)
			continue
		}
		require.NoError(t, gotErr, raw)
		require.Equal(t, want, got, raw)
	}
	// A struct with an embedded one is read by the Decoder alone.
	var want, got strictEmbedded
	for _, raw := range []string{`{"x":1,"z":2}`, `{"x":1,"w":2}`} {
		wantErr := decoder([]byte(raw), &want)
		gotErr := strictjson.Strict([]byte(raw), &got)
		if wantErr != nil {
			require.EqualError(t, gotErr, wantErr.Error(), raw)
		} else {
			require.NoError(t, gotErr)
			require.Equal(t, want, got)
		}
	}
}

func FuzzStrict(f *testing.F) {
	for _, raw := range strictCases {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var want, got strictOuter
		wantErr := decoder([]byte(raw), &want)
		gotErr := strictjson.Strict([]byte(raw), &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%q: Decoder %v, Strict %v", raw, wantErr, gotErr)
		}
		if wantErr != nil {
			if wantErr.Error() != gotErr.Error() {
				t.Fatalf("%q: Decoder %q, Strict %q", raw, wantErr, gotErr)
			}
			return
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%q: Decoder %+v, Strict %+v", raw, want, got)
		}
	})
}
