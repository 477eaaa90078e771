-- A job queue's settings as `batchq configure` and `batchq stats` show them (batchq.policy.settings).

-- name: settings_job_queues
-- Every job queue with a row in batchq_queue (paused once, or configured), or one (:queue).
SELECT name, paused, keep_for, max_length, overflow, payload_schema, rate_limit, rate_period, max_running
FROM batchq_queue
WHERE :queue IS NULL OR name = :queue
ORDER BY name;
