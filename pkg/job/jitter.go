package job

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// jitterSlot numbers the jitter offsets this process hands out. Offsets
// follow the golden-ratio sequence from a random start: any run of
// consecutive ones is spread evenly over [0, 1) (no two closer than about
// 0.4/n among n), which independent random offsets are not (a thousand of
// them put over twice the mean in some second of a minute). A thousand jobs
// created together at the same cron second so start evenly over their
// jitter, and those of several dashboards interleave.
var jitterSlot atomic.Uint64

var jitterStart = rand.Float64()

// NewJitterOffset returns the offset of a job given jitter: a duration in
// [0, jitter) in whole milliseconds, or zero for no jitter.
func NewJitterOffset(jitter time.Duration) time.Duration {
	ms := jitter.Milliseconds()
	if ms <= 0 {
		return 0
	}
	_, frac := math.Modf(jitterStart + float64(jitterSlot.Add(1))*(math.Phi-1))
	return time.Duration(min(int64(frac*float64(ms)), ms-1)) * time.Millisecond
}

// NominalRunAt is a one-off job's time as its owner gave it: RunAt, the
// time it is due, less its jitter offset.
func (j *Job) NominalRunAt() time.Time {
	if j.RunAt.IsZero() {
		return j.RunAt
	}
	return j.RunAt.Add(-j.JitterOffset)
}
