package job_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/job"
)

func TestOccurrence(t *testing.T) {
	t.Parallel()

	t.Run("MemberRoundTrips", func(t *testing.T) {
		t.Parallel()
		at := time.Date(2030, 1, 15, 14, 0, 0, 123_000_000, time.UTC)
		for _, tt := range []struct {
			name     string
			priority int
			attempt  int
			at       time.Time
		}{
			{"MinPriority", job.MinPriority, 1, at},
			{"ZeroPriority", 0, 1, at},
			{"MaxPriority", job.MaxPriority, 1, at},
			{"LaterAttempt", 17, 26, at},
			{"AtEpoch", -1, 2, time.Unix(0, 0).UTC()},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				o := job.Occurrence{JobID: job.NewID(), ScheduledFor: tt.at, Attempt: tt.attempt, Priority: tt.priority}
				got, err := job.ParseMember(o.Member())
				require.NoError(t, err)
				require.Equal(t, o, got)
				require.Equal(t, o.Key(), got.Key())
			})
		}
	})

	t.Run("RoutedMemberRoundTrips", func(t *testing.T) {
		t.Parallel()
		o := job.Occurrence{JobID: job.NewID(), ScheduledFor: time.UnixMilli(1_900_000_000_123).UTC(), Attempt: 2, Priority: -7, Generation: 3}.
			Route(uuid.MustParse("01890000-0000-7000-8000-00000000abcd"), []byte(`{"url":"https://Example.com/hook"}`))
		require.Len(t, strings.Split(o.Member(), ":"), 7)
		require.True(t, strings.HasSuffix(o.Member(), ":AYkAAAAAcACAAAAAAACrzQ:"+job.TargetKey("https://example.com:443/other")), o.Member())
		got, err := job.ParseMember(o.Member())
		require.NoError(t, err)
		require.Equal(t, o, got)
		require.Equal(t, o.Next().Owner, o.Owner, "a retry keeps its route")
	})

	t.Run("BackfillMemberRoundTrips", func(t *testing.T) {
		t.Parallel()
		owner := uuid.MustParse("01890000-0000-7000-8000-00000000abcd")
		for _, flow := range []string{"", "k"} {
			o := job.Occurrence{JobID: job.NewID(), ScheduledFor: time.UnixMilli(1_700_000_000_000).UTC(), Attempt: 1, Generation: 2,
				Backfill: job.NewID()}.Route(owner, []byte(`{"url":"https://example.com/hook"}`)).Through(flow)
			parts := strings.Split(o.Member(), ":")
			require.Len(t, parts, 9, o.Member())
			require.Equal(t, job.OwnerKey(o.Backfill), parts[8])
			got, err := job.ParseMember(o.Member())
			require.NoError(t, err)
			require.Equal(t, o, got)
			require.Equal(t, o.Backfill, o.Next().Backfill, "a retry stays in its backfill")
			require.Equal(t, job.Occurrence{JobID: o.JobID, ScheduledFor: o.ScheduledFor}.Key(), o.Key(), "the occurrence's own key")
		}
		_, err := job.ParseMember("00000:" + job.NewID().String() + ":1:1:0:AYkAAAAAcACAAAAAAACrzQ::" + ":" + job.OwnerKey(uuid.Nil))
		require.Error(t, err)
	})

	t.Run("TargetKeyNamesTheHostAndPort", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, job.TargetKey("https://api.example.com/a"), job.TargetKey("HTTPS://API.EXAMPLE.COM:443/b?c"))
		require.Equal(t, job.TargetKey("http://example.com/"), job.TargetKey("http://example.com:80"))
		require.NotEqual(t, job.TargetKey("http://example.com/"), job.TargetKey("https://example.com/"))
		require.NotEqual(t, job.TargetKey("http://example.com:8080/"), job.TargetKey("http://example.com/"))
		require.Empty(t, job.TargetKey(""))
		require.Empty(t, job.TargetKey("::not a url"))
		require.Equal(t, job.TargetKey("https://hooks.slack.com/x"), job.TargetKey(job.TargetURL([]byte(`{"webhook_url":"https://hooks.slack.com/services/T/B/X","text":"hi"}`))))
		require.Empty(t, job.TargetURL([]byte(`{"to":["a@example.com"]}`)))
	})

	t.Run("MemberStartsWithFiveDigitInvertedPriority", func(t *testing.T) {
		t.Parallel()
		id := uuid.MustParse("01890000-0000-7000-8000-000000000001")
		at := time.UnixMilli(1_900_000_000_000).UTC()
		for prio, want := range map[int]string{
			job.MaxPriority: "00000:01890000-0000-7000-8000-000000000001:1900000000000:1:0",
			0:               "32767:01890000-0000-7000-8000-000000000001:1900000000000:1:0",
			job.MinPriority: "65535:01890000-0000-7000-8000-000000000001:1900000000000:1:0",
		} {
			require.Equal(t, want, job.Occurrence{JobID: id, ScheduledFor: at, Attempt: 1, Priority: prio}.Member())
		}
	})

	t.Run("MemberOrderIsPriorityDescending", func(t *testing.T) {
		t.Parallel()
		// Redis orders members of equal score lexicographically: that order must be
		// the publish order, highest priority first.
		at := time.Date(2030, 1, 15, 14, 0, 0, 0, time.UTC)
		prios := []int{job.MinPriority, -10_000, -1, 0, 1, 9, 10, 99, 100, 10_000, job.MaxPriority}
		rnd := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			rnd.Shuffle(len(prios), func(i, j int) { prios[i], prios[j] = prios[j], prios[i] })
			members := make([]string, len(prios))
			for i, p := range prios {
				members[i] = job.Occurrence{JobID: job.NewID(), ScheduledFor: at, Attempt: 1 + rnd.IntN(5), Priority: p}.Member()
			}
			slices.Sort(members)
			got := make([]int, len(members))
			for i, m := range members {
				o, err := job.ParseMember(m)
				require.NoError(t, err)
				got[i] = o.Priority
			}
			require.True(t, slices.IsSortedFunc(got, func(a, b int) int { return b - a }), "lexicographic order %v is not priority descending", got)
		}
	})

	t.Run("KeyIsTheSameForEveryAttempt", func(t *testing.T) {
		t.Parallel()
		o := job.Occurrence{JobID: job.NewID(), ScheduledFor: time.UnixMilli(1_900_000_000_123).UTC(), Attempt: 1, Priority: 4}
		next := o.Next()
		require.Equal(t, 2, next.Attempt)
		require.Equal(t, 1, o.Attempt, "Next does not change the receiver")
		require.Equal(t, o.Key(), next.Key())
		require.NotEqual(t, o.Member(), next.Member())
		require.Equal(t, o.JobID.String()+":1900000000123", o.Key())
	})

	t.Run("ParseMemberRejectsMalformed", func(t *testing.T) {
		t.Parallel()
		id := job.NewID().String()
		for _, m := range []string{
			"",
			"garbage",
			"32767:" + id + ":1900000000000",
			"32767:" + id + ":1900000000000:1:extra",
			"prio:" + id + ":1900000000000:1:0",
			"32767:not-a-uuid:1900000000000:1:0",
			"32767:" + id + ":soon:1:0",
			"32767:" + id + ":1.5e12:1:0",
			"32767:" + id + ":1900000000000:0:0",
			"32767:" + id + ":1900000000000:-1:0",
			"32767:" + id + ":1900000000000:x:0",
			"32767:" + id + ":1900000000000:1:",
			"32767:" + id + ":1900000000000:1:-1",
			"32767:" + id + ":-1:1:0",
			"32767:" + id + ":253402300800000:1:0",
			"32767:" + id + ":1900000000000:27:0",
			"32767:" + id + ":1900000000000:1:2147483648",
			"65536:" + id + ":1900000000000:1:0",
			strings.ReplaceAll("32767:"+id+":1900000000000:1", ":", ";"),
			"32767:" + id + ":1900000000000:1:0:AYkAAAAAcACAAAAAAACrzQ",
			"32767:" + id + ":1900000000000:1:0:AYkAAAAAcACAAAAAAACrzQ:0badc0de:x",
			"32767:" + id + ":1900000000000:1:0:not-base64!:0badc0de",
			"32767:" + id + ":1900000000000:1:0:AAAAAAAAAAAAAAAAAAAAAA:0badc0de",
			"32767:" + id + ":1900000000000:1:0:AYkAAAAAcACAAAAAAACrzQ:0BADC0DE",
			"32767:" + id + ":1900000000000:1:0:AYkAAAAAcACAAAAAAACrzQ:badc0de",
		} {
			_, err := job.ParseMember(m)
			require.Error(t, err, "member %q", m)
		}
	})
}

// FuzzParseMember checks that ParseMember never panics, that whatever it
// accepts encodes back to a member that decodes to the same occurrence, and
// that every member Member writes is accepted.
func FuzzParseMember(f *testing.F) {
	id := uuid.MustParse("01890000-0000-7000-8000-000000000001")
	for _, o := range []job.Occurrence{
		{JobID: id, ScheduledFor: time.UnixMilli(1_900_000_000_000).UTC(), Attempt: 1, Priority: 0},
		{JobID: id, ScheduledFor: time.UnixMilli(0).UTC(), Attempt: 25, Priority: job.MinPriority},
		{JobID: id, ScheduledFor: time.UnixMilli(-1).UTC(), Attempt: 3, Priority: job.MaxPriority},
		{JobID: id, ScheduledFor: time.UnixMilli(1_900_000_000_000).UTC(), Attempt: 2, Owner: id, Target: "0badc0de"},
		{JobID: id, ScheduledFor: time.UnixMilli(1_900_000_000_000).UTC(), Attempt: 2, Owner: id},
		{JobID: id, ScheduledFor: time.UnixMilli(1_900_000_000_000).UTC(), Attempt: 1, Owner: id, Backfill: id},
		{JobID: id, ScheduledFor: time.UnixMilli(1_900_000_000_000).UTC(), Attempt: 1, Owner: id, Backfill: id, Flow: job.FlowLane(id, "k")},
	} {
		f.Add(o.Member())
	}
	f.Add("")
	f.Add(":::")
	f.Add("1:2:3:4")
	f.Add("-0001:" + id.String() + ":-5:+2")
	f.Fuzz(func(t *testing.T, m string) {
		o, err := job.ParseMember(m)
		if err != nil {
			return
		}
		if o.Attempt < 1 {
			t.Fatalf("accepted attempt %d from %q", o.Attempt, m)
		}
		again, err := job.ParseMember(o.Member())
		if err != nil {
			t.Fatalf("member %q of accepted %q does not parse: %v", o.Member(), m, err)
		}
		if again != o {
			t.Fatalf("round trip of %q: got %+v, want %+v", m, again, o)
		}
	})
}
