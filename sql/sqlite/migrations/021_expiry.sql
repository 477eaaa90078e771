-- Job expiry (issue 30): expires_at is the instant (UTC text, as run_at) after which a job that
-- has not started a try is never run (enqueue(expires=...)); NULL, the default, never expires.
-- The claim skips an expired row and the workers' tick fails it as 'expired' (jobs_expiring,
-- jobs_expire).
ALTER TABLE batchq_job ADD COLUMN expires_at TEXT NULL;

-- The tick's walk to the expired waiting jobs: partial, so jobs without an expiry (most) cost
-- it nothing, and an enqueue without one writes no entry.
CREATE INDEX IF NOT EXISTS batchq_job_expiry ON batchq_job (expires_at)
    WHERE expires_at IS NOT NULL AND status IN ('ready', 'scheduled', 'blocked');
