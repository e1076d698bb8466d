package schedule

import (
	"encoding/json"
	"fmt"
)

// FromJSON compiles a schedule stored as its normalized Spec (what
// (*Schedule).Spec returns, marshalled). The stored start_at is the compile
// time, so the same occurrences come out as when the job was created.
func FromJSON(raw []byte) (*Schedule, error) { return FromJSONWithin(nil, raw) }

// FromJSONWithin is FromJSON spending from b, and returns the schedule bound
// to b. A stored schedule was valid when it was stored, so an error here is
// either a budget that ran out (ErrTooExpensive or the context's error,
// wrapped) or a change to this package that no longer accepts it.
func FromJSONWithin(b *Budget, raw []byte) (*Schedule, error) {
	var spec Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("decode stored schedule: %w", err)
	}
	if spec.StartAt == nil {
		return nil, fmt.Errorf("decode stored schedule: no start_at")
	}
	sc, err := spec.CompileWithin(b, *spec.StartAt)
	if err != nil && b.Err() != nil {
		return nil, fmt.Errorf("compile stored schedule: %w", b.Err())
	}
	return sc, err
}
