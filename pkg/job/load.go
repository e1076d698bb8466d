package job

import "math/bits"

// Load is when a recurring job fires, folded onto the UTC day: the hours of
// the day, the minutes of the hour and the seconds of the minute it fires in
// (bit h of Hours, bit m of Minutes, bit s of Seconds). Its owner's limits
// on occurrences a minute and a second add these up, so that a burst (six
// hundred jobs every second of minute 51, thirty-five thousand at 21:00 of
// every hour) counts where it happens instead of being averaged over the
// hour.
//
// It is a product: the job is taken to fire in every second (h, m, s) of
// Hours × Minutes × Seconds, at most once a second. A job that runs at 09:15
// and 17:45 is counted at 09:45 and 17:15 too; the folding errs towards
// counting too much, never too little.
type Load struct {
	Hours   uint32
	Minutes uint64
	Seconds uint64
}

// The full masks: every hour of the day, every minute of the hour, every
// second of the minute.
const (
	AllHours   uint32 = 1<<24 - 1
	AllMinutes uint64 = 1<<60 - 1
	AllSeconds uint64 = 1<<60 - 1
)

// Add records that the job fires in second s of minute m of hour h (UTC).
func (l *Load) Add(h, m, s int) {
	l.Hours |= 1 << h
	l.Minutes |= 1 << m
	l.Seconds |= 1 << s
}

// Empty reports a job that does not fire at all (its recurrence ended).
func (l Load) Empty() bool { return l.Hours == 0 || l.Minutes == 0 || l.Seconds == 0 }

// PerMinute is how many times the job fires in each minute it fires in.
func (l Load) PerMinute() int {
	if l.Empty() {
		return 0
	}
	return bits.OnesCount64(l.Seconds)
}

// Within reports whether l fires nowhere o does not, at most as often: a job
// whose load goes from o to l cannot make any minute or second busier.
func (l Load) Within(o Load) bool {
	return l.Empty() || l.Hours&^o.Hours == 0 && l.Minutes&^o.Minutes == 0 && l.Seconds&^o.Seconds == 0
}
