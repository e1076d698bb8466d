package telemetry

import "go.opentelemetry.io/otel/attribute"

// The attributes tock puts on its spans, named once here and listed in
// docs/observability.md. Ids are strings; counts and numbers are ints.
const (
	// JobID is the job's id (uuid).
	JobID = attribute.Key("tock.job.id")
	// JobType is the job's type: webhook, ping, nats...
	JobType = attribute.Key("tock.job.type")
	// OwnerID is the id of the user the job belongs to.
	OwnerID = attribute.Key("tock.owner.id")
	// RunID is the id of the attempt's run record.
	RunID = attribute.Key("tock.run.id")
	// Attempt is the attempt's number, from 1.
	Attempt = attribute.Key("tock.attempt")
	// ScheduledFor is the occurrence's scheduled time, RFC 3339.
	ScheduledFor = attribute.Key("tock.scheduled_for")
	// LatenessMS is how late the attempt started after it was due.
	LatenessMS = attribute.Key("tock.lateness_ms")
	// Outcome is the status the attempt is recorded with: completed,
	// failed, permanently_failed, aborted, skipped or expired.
	Outcome = attribute.Key("tock.outcome")
	// Link says what a link points at: "creation", the span that created
	// the job.
	Link = attribute.Key("tock.link")
	// Jobs counts the jobs a create span wrote, or a loader round claimed.
	Jobs = attribute.Key("tock.jobs")
	// Occurrences counts the occurrences a loader round put in Redis.
	Occurrences = attribute.Key("tock.occurrences")
	// Skipped counts the occurrences a loader round's misfire policies skipped.
	Skipped = attribute.Key("tock.skipped")
	// Batches counts the batches (one claim statement each) of a loader round.
	Batches = attribute.Key("tock.batches")
	// Shard is the Redis shard a publisher works on.
	Shard = attribute.Key("tock.shard")
	// Published counts the members a publish moved to the ready stream.
	Published = attribute.Key("tock.published")
	// Held counts the members a publish held back for fair dispatch.
	Held = attribute.Key("tock.held")
)

// The OpenTelemetry semantic conventions' HTTP attributes tock sets.
const (
	HTTPMethod     = attribute.Key("http.request.method")
	HTTPRoute      = attribute.Key("http.route")
	HTTPStatusCode = attribute.Key("http.response.status_code")
)
