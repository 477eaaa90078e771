-- Telemetry (issue 28): trace_context is the W3C trace context of the request that enqueued the
-- job ('traceparent' or 'traceparent tracestate'), written by an enqueue middleware such as
-- batchq.contrib.otel's; NULL, the default, for a job enqueued outside any trace. The claim does
-- not return it: a worker whose middleware asks reads it by id (job_trace_context).
-- ASCII at most 512 characters (JobSpec checks it). A nullable column at the table's end: added
-- instantly (InnoDB), no rebuild.
ALTER TABLE batchq_job ADD COLUMN trace_context VARCHAR(512) NULL;
