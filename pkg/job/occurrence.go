package job

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/url"
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
	// Owner and Target route the occurrence through the scheduler's fair
	// dispatch: it is held back while its owner, or the host it calls, has
	// too many attempts in flight. Target is TargetKey of the job's URL, ""
	// for a job that calls no user-given host (email). An occurrence with no
	// Owner (one planned before tock routed them) is never held back.
	Owner  uuid.UUID
	Target string
	// Flow is the occurrence's flow lane (FlowLane of its owner and its
	// job's flow key), "" for none: it is also held back while that key is
	// at its own limits.
	Flow string
	// Backfill is the backfill that queued the occurrence (a past one, run
	// now at its owner's request), uuid.Nil for none: the worker runs it
	// even though it is overdue, while the backfill is not cancelled, and
	// tells the target (X-Tock-Backfill).
	Backfill uuid.UUID
}

// Key is the occurrence's idempotency key, sent to targets as Idempotency-Key.
func (o Occurrence) Key() string {
	return o.JobID.String() + ":" + strconv.FormatInt(o.ScheduledFor.UnixMilli(), 10)
}

// Member encodes the occurrence as a sorted-set member:
// <inverted priority>:<job id>:<scheduled_for ms>:<attempt>:<generation>,
// then :<owner>:<target> when it has an owner (the owner's 16 bytes in
// unpadded base64url, the target as TargetKey). Redis orders members of
// equal score lexicographically, so the member starts with the priority
// inverted into five digits: among occurrences due at the same millisecond,
// the higher priority sorts first and is published first. The publisher's
// script reads the parts after the generation (see pkg/queue). A
// backfill's occurrence, always routed, has a ninth part, the backfill's
// id as OwnerKey writes an owner, after its flow lane (empty for none).
func (o Occurrence) Member() string {
	m := fmt.Sprintf("%05d:%s:%d:%d:%d", MaxPriority-o.Priority, o.JobID, o.ScheduledFor.UnixMilli(), o.Attempt, o.Generation)
	if o.Owner == uuid.Nil {
		return m
	}
	m += ":" + OwnerKey(o.Owner) + ":" + o.Target
	if o.Backfill != uuid.Nil {
		return m + ":" + o.Flow + ":" + OwnerKey(o.Backfill)
	}
	if o.Flow != "" {
		m += ":" + o.Flow
	}
	return m
}

// OwnerKey is how an owner is written in members and in the scheduler's
// per-owner keys: its 16 bytes in unpadded base64url (22 characters).
func OwnerKey(owner uuid.UUID) string { return base64.RawURLEncoding.EncodeToString(owner[:]) }

// TargetKey names the host a URL calls, for the per-host cap on attempts in
// flight: 8 hex digits of FNV-1a over its lower-case host and port (the
// scheme's default port when none is given). "" for no URL or one that does
// not parse. Two hosts may share a key; they then share the cap.
func TargetKey(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(strings.ToLower(u.Hostname()) + ":" + port))
	return fmt.Sprintf("%08x", h.Sum32())
}

// TargetURL is the user-given URL a job's payload calls: "url" (webhook,
// ping) or "webhook_url" (slack); "" for a payload without one (email).
// store's claim queries read the same two fields in SQL (targetURLSQL).
func TargetURL(payload []byte) string {
	var p struct {
		URL        string `json:"url"`
		WebhookURL string `json:"webhook_url"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return ""
	}
	if p.URL != "" {
		return p.URL
	}
	return p.WebhookURL
}

// Route sets the occurrence's owner and target from its job.
func (o Occurrence) Route(owner uuid.UUID, payload []byte) Occurrence {
	o.Owner, o.Target = owner, TargetKey(TargetURL(payload))
	return o
}

// Through routes the occurrence through owner's flow key (none when key is
// empty).
func (o Occurrence) Through(key string) Occurrence {
	o.Flow = ""
	if key != "" {
		o.Flow = FlowLane(o.Owner, key)
	}
	return o
}

// ParseMember decodes what Member encoded.
func ParseMember(m string) (Occurrence, error) {
	parts := strings.Split(m, ":")
	if len(parts) != 5 && len(parts) != 7 && len(parts) != 8 && len(parts) != 9 {
		return Occurrence{}, fmt.Errorf("parse member %q: want 5, 7, 8 or 9 parts", m)
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
	o := Occurrence{JobID: id, ScheduledFor: time.UnixMilli(ms).UTC(), Attempt: attempt, Priority: MaxPriority - inv, Generation: gen}
	if len(parts) == 9 {
		raw, err := base64.RawURLEncoding.DecodeString(parts[8])
		if err != nil || len(raw) != 16 {
			return Occurrence{}, fmt.Errorf("parse member %q: bad backfill", m)
		}
		copy(o.Backfill[:], raw)
		if o.Backfill == uuid.Nil {
			return Occurrence{}, fmt.Errorf("parse member %q: bad backfill", m)
		}
	}
	if len(parts) >= 8 && (len(parts) == 8 || parts[7] != "") {
		if !validFlowLane(parts[7]) {
			return Occurrence{}, fmt.Errorf("parse member %q: bad flow", m)
		}
		o.Flow = parts[7]
	}
	if len(parts) >= 7 {
		raw, err := base64.RawURLEncoding.DecodeString(parts[5])
		if err != nil || len(raw) != 16 {
			return Occurrence{}, fmt.Errorf("parse member %q: bad owner", m)
		}
		copy(o.Owner[:], raw)
		if o.Owner == uuid.Nil {
			return Occurrence{}, fmt.Errorf("parse member %q: bad owner", m)
		}
		if t := parts[6]; t != "" && (len(t) != 8 || strings.Trim(t, "0123456789abcdef") != "") {
			return Occurrence{}, fmt.Errorf("parse member %q: bad target", m)
		}
		o.Target = parts[6]
	}
	return o, nil
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
