package api

import (
	"testing"

	"github.com/stretchr/testify/require"
)

var batchBodies = []string{
	`{"jobs":[{"name":"a"},{"name":"b"}]}`,
	`{"owner":"00000000-0000-0000-0000-000000000001","jobs":[{"name":"a"}]}`,
	` { "jobs" : [ {"name":"a"} , 1 , null , "x" ] , "owner" : null } `,
	`{"jobs":[]}`,
	`{"jobs":null}`,
	`{}`,
	`{"Jobs":[{"name":"a"}]}`,
	`{"jobs":[{"name":"a"}],"jobs":[{"name":"b"}]}`,
	`{"jobs":[{"name":"a"}],"extra":1}`,
	`{"job\u0073":[{"name":"a"}]}`,
	`{"jobs":{"name":"a"}}`,
	`{"jobs":"a"}`,
	`{"owner":7,"jobs":[]}`,
	`{"jobs":[{"name":"a"}]} {}`,
	`{"jobs":[{"name":"a"}]`,
	`[]`,
	``,
}

// readBatch must read every body as decodeStrict does: the same jobs, the
// same owner, the same error.
func TestReadBatchAgreesWithDecodeStrict(t *testing.T) {
	t.Parallel()
	for _, body := range batchBodies {
		checkReadBatch(t, body)
	}
}

func FuzzReadBatch(f *testing.F) {
	for _, body := range batchBodies {
		f.Add(body)
	}
	f.Fuzz(checkReadBatch)
}

func checkReadBatch(t *testing.T, body string) {
	var want batchRequest
	wantErr := decodeStrict([]byte(body), &want)
	got, gotErr := readBatch([]byte(body))
	if wantErr != nil {
		require.Error(t, gotErr, body)
		require.Equal(t, wantErr.Error(), gotErr.Error(), body)
		return
	}
	require.NoError(t, gotErr, body)
	require.Equal(t, want.Owner, got.Owner, body)
	require.Equal(t, len(want.Jobs), len(got.Jobs), body)
	require.Equal(t, want.Jobs == nil, got.Jobs == nil, body)
	for i := range want.Jobs {
		require.Equal(t, string(want.Jobs[i]), string(got.Jobs[i]), body)
	}
}
