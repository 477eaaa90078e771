-- Job dependencies (issue 30): enqueue(after=[ids]) and the chains and groups built on it.
-- A waiting job is 'scheduled' with run_at at the end of time (batchq.dependencies.WAITING_RUN_AT):
-- no claim and no promotion ever reaches it along batchq_job_due (and no CHECK constraint has to
-- change, which would rebuild the table). parents_left: how many of its parents have not
-- succeeded yet (NULL: it never had any); the finish of its last parent makes it ready.
-- dependants: 1 on a job some other job waits for; the plain finish (jobs_delete) leaves such a
-- job to batchq.dependencies.finish_parents, which releases its children in the transaction that
-- deletes it.
ALTER TABLE batchq_job ADD COLUMN parents_left INTEGER NULL;
ALTER TABLE batchq_job ADD COLUMN dependants INTEGER NOT NULL DEFAULT 0;

-- One row per (parent, child) while the parent has not succeeded: its success deletes its rows.
CREATE TABLE IF NOT EXISTS batchq_dependency (
    parent_id INTEGER NOT NULL,
    child_id  INTEGER NOT NULL,
    PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS batchq_dependency_child ON batchq_dependency (child_id);
