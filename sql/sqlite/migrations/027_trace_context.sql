-- Telemetry (issue 28): trace_context is the W3C trace context of the request that enqueued the
-- job ('traceparent' or 'traceparent tracestate'), written by an enqueue middleware such as
-- batchq.contrib.otel's; NULL, the default, for a job enqueued outside any trace. The claim does
-- not return it: a worker whose middleware asks reads it by id (job_trace_context).
ALTER TABLE batchq_job ADD COLUMN trace_context TEXT NULL;
