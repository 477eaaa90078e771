-- Job progress (issue 30): what a running task last reported through batchq.progress(), a
-- fraction in [0, 1] and a short message, and when it was written (the server's clock). Written
-- only by the task's own call (job_progress), fenced by its claim token; never read or written by
-- the claim, the finish or the enqueue. NULL: nothing reported. Kept when a try fails, so an
-- operator sees how far it got; progress_at older than processing_at tells an earlier try's.
-- Nullable without a default: a change of the catalog only, whatever the number of jobs; no
-- index on them, so the update stays a HOT one where the page has room.
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS progress DOUBLE PRECISION NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS progress_message TEXT NULL;
ALTER TABLE batchq_job ADD COLUMN IF NOT EXISTS progress_at TIMESTAMPTZ NULL;
