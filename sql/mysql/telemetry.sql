-- Telemetry (batchq.jobs.hooks, batchq.contrib.otel): what a job's middleware reads besides the claim.

-- name: job_trace_context
-- The W3C trace context the job's enqueue stored (NULL: none), read by its primary key only when
-- a worker's middleware asks for it (Call.trace_context): the claim never carries the column.
SELECT trace_context FROM batchq_job WHERE id = %(id)s;
