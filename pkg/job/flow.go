package job

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Flow names the flow key a job's occurrences go through, and may set that
// key's limits: at most Concurrency attempts in flight, at most Rate.Count
// starts in any Rate.Period. The limits belong to the key, per owner: a job
// that gives them sets them for every job of the key, as PUT
// /api/v1/flows/{key} does, and a job that names only the key runs under
// the key's. An occurrence over a limit waits, in due order, and is never
// dropped for it.
type Flow struct {
	Key         string `json:"key"`
	Concurrency int    `json:"concurrency,omitempty"`
	Rate        *Rate  `json:"rate,omitempty"`
}

// KeyOrNone is f's key, "" for a nil f.
func (f *Flow) KeyOrNone() string {
	if f == nil {
		return ""
	}
	return f.Key
}

// HasLimits reports whether f sets its key's limits.
func (f *Flow) HasLimits() bool { return f != nil && (f.Concurrency > 0 || f.Rate != nil) }

// Flow key and limit bounds.
const (
	MaxFlowKeyLen      = 200
	MaxFlowConcurrency = 100_000
	MaxRateCount       = 10_000
	MinRatePeriod      = 10 * time.Millisecond
	MaxRatePeriod      = 24 * time.Hour
)

// Rate is a limit on starts: at most Count in any window of Period. Its
// text is "<count>/<period>", such as "50/1s" or "1000/1h".
type Rate struct {
	Count  int
	Period time.Duration
}

func (r Rate) String() string {
	var p string
	switch d := r.Period; {
	case d%time.Hour == 0:
		p = strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		p = strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		p = strconv.FormatInt(int64(d/time.Second), 10) + "s"
	default:
		p = d.String()
	}
	return strconv.Itoa(r.Count) + "/" + p
}

// ParseRate reads "<count>/<period>": a count from 1 to MaxRateCount and a
// period from MinRatePeriod to MaxRatePeriod, such as "1s", "500ms" or
// "1h"; a bare unit ("50/s", "100/m", "1000/h") means one of it.
func ParseRate(s string) (Rate, error) {
	count, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("must be <count>/<period>, such as \"50/1s\"")
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > MaxRateCount {
		return Rate{}, fmt.Errorf("count must be a whole number from 1 to %d", MaxRateCount)
	}
	switch period {
	case "ms", "s", "m", "h":
		period = "1" + period
	}
	d, err := time.ParseDuration(period)
	if err != nil || d < MinRatePeriod || d > MaxRatePeriod {
		return Rate{}, fmt.Errorf("period must be a duration from 10ms to 24h, such as \"1s\"")
	}
	return Rate{Count: n, Period: d}, nil
}

// MarshalText writes the rate as "<count>/<period>".
func (r Rate) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (r *Rate) UnmarshalText(b []byte) error {
	v, err := ParseRate(string(b))
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// FlowLane is how an owner's flow key is written in members and in the
// scheduler's keys: 16 characters of unpadded base64url over the first 12
// bytes of SHA-256 of the owner's id and the key, so that one owner's key
// never shares a lane with another's, and no key can be made to.
func FlowLane(owner uuid.UUID, key string) string {
	h := sha256.New()
	h.Write(owner[:])
	h.Write([]byte(key))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// validFlowLane reports whether s is what FlowLane writes.
func validFlowLane(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
