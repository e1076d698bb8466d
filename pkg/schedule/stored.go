package schedule

import (
	"encoding/json"
	"fmt"
)

// FromJSON compiles a schedule stored as its normalized Spec (what
// (*Schedule).Spec returns, marshalled). The stored start_at is the compile
// time, so the same occurrences come out as when the job was created.
func FromJSON(raw []byte) (*Schedule, error) {
	var spec Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("decode stored schedule: %w", err)
	}
	if spec.StartAt == nil {
		return nil, fmt.Errorf("decode stored schedule: no start_at")
	}
	return spec.Compile(*spec.StartAt)
}
