-- Job expiry (issue 30): expires_at is the instant after which a job that has not started a try
-- is never run (enqueue(expires=...)); NULL, the default, never expires. The claim skips an
-- expired row and the workers' tick fails it as 'expired' (jobs_expiring, jobs_expire).
-- Two statements: the nullable column at the table's end is added instantly (InnoDB), then the
-- index is built in place while the table stays readable and writable.
ALTER TABLE batchq_job ADD COLUMN expires_at DATETIME(6) NULL;

-- The tick's walk to the expired waiting jobs: its range scan (expires_at <= now) starts past
-- the NULLs, so jobs without an expiry (most) cost it nothing.
ALTER TABLE batchq_job ADD KEY batchq_job_expiry (expires_at);
