-- Tracing (OpenTelemetry): the W3C traceparent of the span that created the
-- job, written only by a dashboard with tracing on, so each attempt's span
-- can link to the job's creation. NULL otherwise: a job created without
-- tracing stores nothing more. A nullable column without a default is a
-- change of the catalogue only, instant on a table of any size.
ALTER TABLE jobs ADD COLUMN trace_parent text;
