package api

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tockhq/tock/pkg/store"
)

// Cursors are opaque to clients: URL-safe base64 of the last item's keyset
// position, so the format can change without breaking anyone who only echoes
// next_cursor back.
var cursorEncoding = base64.RawURLEncoding

// jobCursor is the position after job id in the newest-first job listing.
func jobCursor(id uuid.UUID) string { return cursorEncoding.EncodeToString(id[:]) }

func parseJobCursor(s string) (uuid.UUID, error) {
	b, err := cursorEncoding.DecodeString(s)
	if err != nil || len(b) != len(uuid.UUID{}) {
		return uuid.Nil, fmt.Errorf("bad job cursor")
	}
	return uuid.UUID(b), nil
}

// runCursor is the position after a run: its scheduled_for in unix ms and
// its attempt, the order ListRuns pages in.
func runCursor(at time.Time, attempt int) string {
	return cursorEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMilli(), 10) + "." + strconv.Itoa(attempt)))
}

func parseRunCursor(s string) (*store.RunCursor, error) {
	b, err := cursorEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad run cursor")
	}
	msText, attemptText, ok := strings.Cut(string(b), ".")
	ms, err1 := strconv.ParseInt(msText, 10, 64)
	attempt, err2 := strconv.Atoi(attemptText)
	if !ok || err1 != nil || err2 != nil || attempt < 1 {
		return nil, fmt.Errorf("bad run cursor")
	}
	return &store.RunCursor{ScheduledFor: time.UnixMilli(ms).UTC(), Attempt: attempt}, nil
}

// runSearchCursor is the position after a run in a search across jobs: its
// scheduled_for in unix microseconds, its attempt and its job id.
func runSearchCursor(c store.RunCursor) string {
	return cursorEncoding.EncodeToString([]byte(strconv.FormatInt(c.ScheduledFor.UnixMicro(), 10) + "." +
		strconv.Itoa(c.Attempt) + "." + c.JobID.String()))
}

func parseRunSearchCursor(s string) (*store.RunCursor, error) {
	b, err := cursorEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad run search cursor")
	}
	parts := strings.Split(string(b), ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("bad run search cursor")
	}
	us, err1 := strconv.ParseInt(parts[0], 10, 64)
	attempt, err2 := strconv.Atoi(parts[1])
	id, err3 := uuid.Parse(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || attempt < 0 || attempt > math.MaxInt16 {
		return nil, fmt.Errorf("bad run search cursor")
	}
	return &store.RunCursor{ScheduledFor: time.UnixMicro(us).UTC(), Attempt: attempt, JobID: id}, nil
}

// auditCursor is the position after an audit entry in the newest-first log.
func auditCursor(id int64) string {
	return cursorEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

func parseAuditCursor(s string) (int64, error) {
	b, err := cursorEncoding.DecodeString(s)
	if err != nil {
		return 0, fmt.Errorf("bad audit cursor")
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("bad audit cursor")
	}
	return id, nil
}

// page trims a listing that was fetched with one item more than limit, to
// learn whether another page follows, and returns the cursor of the next
// page: "" on the last one.
func page[T any](items []T, limit int, cursor func(T) string) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, cursor(items[limit-1])
}
