-- The claim index holds 'ready' rows only (issue 29): batchq_job_claim becomes (queue, priority
-- DESC, run_at, id) WHERE status = 'ready'. With status as its second column, a claim's UPDATE
-- (ready -> processing, not HOT) put the job's new entry on the leaf page the next claim reads
-- ('processing' sorts just before 'ready'); that page kept changing, so no claim could mark the
-- dead 'ready' entries it passed, and each claim read their heap rows again: a 20,000-job drain
-- read 36 -> 204 -> 127 -> 50 heap blocks per job, part by part, where it now reads 10, flat
-- (bench/drain_statements.py, bench/RESULTS.md).
-- The other waiting states keep a queue-led walk in claim order, batchq_job_parked: 'scheduled'
-- (a delay, a backoff, a job waiting for its parents), 'blocked' (a concurrency slot) and
-- 'failed' (for a human), for the dashboard's pages, its search of one queue, cancel and purge.
-- 'processing' rows, as many as the running jobs, are read through batchq_job_due's status
-- prefix: the claim's UPDATE enters neither partial index.
-- Built before the old index goes, so every claim has an index to walk meanwhile. The new
-- claim index is built under another name and renamed; each step is safe to run again.
CREATE INDEX IF NOT EXISTS batchq_job_parked ON batchq_job (queue, status, priority DESC, run_at, id)
    WHERE status IN ('scheduled', 'blocked', 'failed');
CREATE INDEX IF NOT EXISTS batchq_job_claim_ready ON batchq_job (queue, priority DESC, run_at, id)
    WHERE status = 'ready';
DROP INDEX IF EXISTS batchq_job_claim;
ALTER INDEX batchq_job_claim_ready RENAME TO batchq_job_claim;
