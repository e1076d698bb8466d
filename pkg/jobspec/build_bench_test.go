package jobspec_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tockhq/tock/pkg/jobspec"
)

// BenchmarkDecodeBuild is one job of a bulk create as make bench sends it
// (a ping with a 22-byte payload, due at an instant): what the dashboard
// does per job before the COPY.
func BenchmarkDecodeBuild(b *testing.B) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	raw := []byte(fmt.Sprintf(`{"name":"ingest-bulk-12345","type":"ping","run_at":%q,"payload":{"url":"http://a.io/"}}`,
		now.Add(24*time.Hour).Format("2006-01-02T15:04:05.000Z07:00")))
	var owner [16]byte
	b.ReportAllocs()
	for b.Loop() {
		req, err := jobspec.DecodePart(raw, jobspec.Create)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := req.Build(nil, owner, now, jobspec.DefaultLimits); err != nil {
			b.Fatal(err)
		}
	}
}
