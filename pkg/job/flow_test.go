package job

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]Rate{
		"50/1s": {50, time.Second}, "10/s": {10, time.Second}, "1000/1h": {1000, time.Hour},
		"3/500ms": {3, 500 * time.Millisecond}, "5/10s": {5, 10 * time.Second}, "7/90s": {7, 90 * time.Second},
	} {
		got, err := ParseRate(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
		again, err := ParseRate(got.String())
		require.NoError(t, err, got.String())
		require.Equal(t, got, again, "%s reads back", got)
	}
	require.Equal(t, "5/10s", Rate{5, 10 * time.Second}.String())
	require.Equal(t, "7/90s", Rate{7, 90 * time.Second}.String())
	for _, bad := range []string{"", "50", "0/1s", "-1/1s", "10001/1s", "5/1ms", "5/25h", "5/x", "a/1s", "5/0s"} {
		_, err := ParseRate(bad)
		require.Error(t, err, bad)
	}
}

func TestFlowMember(t *testing.T) {
	owner, other := uuid.New(), uuid.New()
	lane := FlowLane(owner, "customer-42")
	require.Len(t, lane, 16)
	require.NotEqual(t, lane, FlowLane(other, "customer-42"), "one owner's key is not another's")
	require.Equal(t, lane, FlowLane(owner, "customer-42"))
	o := Occurrence{JobID: NewID(), ScheduledFor: time.UnixMilli(1_700_000_000_000).UTC(), Attempt: 2, Generation: 3}.
		Route(owner, []byte(`{"url":"https://example.com/x"}`)).Through("customer-42")
	back, err := ParseMember(o.Member())
	require.NoError(t, err)
	require.Equal(t, o, back)
	require.Equal(t, "", o.Through("").Flow)
	_, err = ParseMember(o.Member()[:len(o.Member())-1] + "!")
	require.Error(t, err)
}
