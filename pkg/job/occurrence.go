package job

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Occurrence names one attempt of one due instant of a job. Its Key (job id and
// scheduled_for) is the idempotency key: the same on every attempt and every
// redelivery. Its Member is how Redis holds it in the due set and the stream.
type Occurrence struct {
	JobID        uuid.UUID
	ScheduledFor time.Time // millisecond precision, UTC
	Attempt      int       // 1 for the first try
	Priority     int
	// Generation is the job's schedule generation when the occurrence was
	// planned. Editing, pausing or resuming a job bumps it, so an occurrence
	// planned before the change can never start.
	Generation int
}

// Key is the occurrence's idempotency key, sent to targets as Idempotency-Key.
func (o Occurrence) Key() string {
	return o.JobID.String() + ":" + strconv.FormatInt(o.ScheduledFor.UnixMilli(), 10)
}

// Member encodes the occurrence as a sorted-set member. Redis orders members of
// equal score lexicographically, so the member starts with the priority inverted
// into five digits: among occurrences due at the same millisecond, the higher
// priority sorts first and is published first.
func (o Occurrence) Member() string {
	return fmt.Sprintf("%05d:%s:%d:%d:%d", MaxPriority-o.Priority, o.JobID, o.ScheduledFor.UnixMilli(), o.Attempt, o.Generation)
}

// ParseMember decodes what Member encoded.
func ParseMember(m string) (Occurrence, error) {
	parts := strings.Split(m, ":")
	if len(parts) != 5 {
		return Occurrence{}, fmt.Errorf("parse member %q: want 5 parts", m)
	}
	inv, err := strconv.Atoi(parts[0])
	if err != nil || inv < 0 || inv > MaxPriority-MinPriority {
		return Occurrence{}, fmt.Errorf("parse member %q: bad priority", m)
	}
	id, err := uuid.Parse(parts[1])
	if err != nil {
		return Occurrence{}, fmt.Errorf("parse member %q: job id: %w", m, err)
	}
	ms, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil {
		return Occurrence{}, fmt.Errorf("parse member %q: scheduled_for: %w", m, err)
	}
	if ms < minMemberMS || ms > maxMemberMS {
		return Occurrence{}, fmt.Errorf("parse member %q: scheduled_for out of range", m)
	}
	attempt, err := strconv.Atoi(parts[3])
	if err != nil || attempt < 1 || attempt > MaxRetriesLimit+1 {
		return Occurrence{}, fmt.Errorf("parse member %q: bad attempt", m)
	}
	gen, err := strconv.Atoi(parts[4])
	if err != nil || gen < 0 || gen > math.MaxInt32 {
		return Occurrence{}, fmt.Errorf("parse member %q: bad generation", m)
	}
	return Occurrence{JobID: id, ScheduledFor: time.UnixMilli(ms).UTC(), Attempt: attempt, Priority: MaxPriority - inv, Generation: gen}, nil
}

// The range of due times a member may carry: what Postgres and every
// client can represent, years 1970 to 9999.
const (
	minMemberMS = 0
	maxMemberMS = 253402300799999
)

// Next is the occurrence's following attempt.
func (o Occurrence) Next() Occurrence {
	o.Attempt++
	return o
}
