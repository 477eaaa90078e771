-- Unique jobs: while a job with a unique_key is waiting (ready, scheduled, blocked) or running,
-- an enqueue with the same key writes nothing (ON CONFLICT DO NOTHING) and is given that job's
-- id. The partial unique index holds keys in those states only: a failed job's key is free,
-- and jobs without a key cost nothing.
ALTER TABLE batchq_job ADD COLUMN unique_key TEXT NULL;
CREATE UNIQUE INDEX batchq_job_unique ON batchq_job (unique_key)
    WHERE unique_key IS NOT NULL AND status IN ('ready', 'scheduled', 'blocked', 'processing');
