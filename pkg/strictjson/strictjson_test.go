package strictjson_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
	"github.com/tockhq/tock/pkg/strictjson"
)

func TestObject(t *testing.T) {
	t.Parallel()
	t.Run("SplitsMembersInOrder", func(t *testing.T) {
		t.Parallel()
		ms, err := strictjson.Object([]byte(` { "a" : 1 , "b\"c":{"x":[1,"}",{"y":null}]}, "d":"e\"f" , "g": [] ,"h":true} `))
		require.NoError(t, err)
		var names, values []string
		for _, m := range ms {
			names, values = append(names, m.Name()), append(values, string(m.Value))
		}
		require.Equal(t, []string{"a", `b"c`, "d", "g", "h"}, names)
		require.Equal(t, []string{"1", `{"x":[1,"}",{"y":null}]}`, `"e\"f"`, "[]", "true"}, values)
		_, plain := ms[1].Plain()
		require.False(t, plain, "an escaped key is not plain")
		k, plain := ms[0].Plain()
		require.True(t, plain)
		require.Equal(t, "a", string(k))
	})
	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		ms, err := strictjson.Object([]byte(`{}`))
		require.NoError(t, err)
		require.Empty(t, ms)
	})
	for _, bad := range []string{``, `{`, `{"a":}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1}}`, `{"a":1} {}`, `nul`} {
		t.Run("Refuses/"+bad, func(t *testing.T) {
			t.Parallel()
			_, err := strictjson.Object([]byte(bad))
			var fe *job.FieldError
			require.True(t, errors.As(err, &fe), "%q: %v", bad, err)
			require.Equal(t, "the body is not valid JSON", fe.Message)
		})
	}
	for _, notObject := range []string{`[]`, `"a"`, `1`, `null`} {
		t.Run("NotAnObject/"+notObject, func(t *testing.T) {
			t.Parallel()
			_, err := strictjson.Object([]byte(notObject))
			var fe *job.FieldError
			require.True(t, errors.As(err, &fe))
			require.Equal(t, "the body must be a JSON object", fe.Message)
		})
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	type inner struct {
		X int `json:"x"`
	}
	var v struct {
		A string `json:"a"`
		B inner  `json:"b"`
	}
	err := strictjson.Decode([]byte(`{"a":"x","b":{"x":1,"z":2}}`), &v, "payload")
	var fe *job.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "payload.b.z", fe.Field)
	require.Equal(t, "is not a known field", fe.Message)
	err = strictjson.Unmarshal([]byte(`"x"`), new(int), "priority")
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "priority", fe.Field)
	require.Equal(t, "must be an integer", fe.Message)
}

func TestElements(t *testing.T) {
	t.Parallel()
	els, ok := strictjson.Elements([]byte(` [ 1 , "a,]" , {"b":[2,3]}, [], null,true ] `))
	require.True(t, ok)
	var got []string
	for _, e := range els {
		got = append(got, string(e))
	}
	require.Equal(t, []string{"1", `"a,]"`, `{"b":[2,3]}`, "[]", "null", "true"}, got)
	els, ok = strictjson.Elements([]byte(`[]`))
	require.True(t, ok)
	require.Empty(t, els)
	_, ok = strictjson.Elements([]byte(`{"a":1}`))
	require.False(t, ok)
	// An element's capacity ends with it: appending to it copies.
	els, _ = strictjson.Elements([]byte(`[1,2]`))
	_ = append(els[0], '9')
	require.Equal(t, "2", string(els[1]))
}

func TestMembersTakesWellFormedParts(t *testing.T) {
	t.Parallel()
	ms, err := strictjson.Members([]byte(`{"a":1,"b":{"c":2}}`))
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, `{"c":2}`, string(ms[1].Value))
	_, err = strictjson.Members([]byte(`[1]`))
	var fe *job.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "the body must be a JSON object", fe.Message)
}
