-- Job dependencies (issue 30): enqueue(after=[ids]) and the chains and groups built on it.
-- A waiting job is 'scheduled' with run_at at the end of time (batchq.dependencies.WAITING_RUN_AT):
-- no claim and no promotion ever reaches it along batchq_job_due. parents_left: how many of its
-- parents have not succeeded yet (NULL: it never had any); the finish of its last parent makes
-- it ready. dependants: 1 on a job some other job waits for; the plain finish (every claim's
-- DELETE) leaves such a job to batchq.dependencies.finish_parents, which releases its children in
-- the transaction that deletes it. Both columns are added with their defaults: no table rebuild.
ALTER TABLE batchq_job ADD COLUMN parents_left INT NULL, ADD COLUMN dependants TINYINT NOT NULL DEFAULT 0;

-- One row per (parent, child) while the parent has not succeeded: its success deletes its rows.
CREATE TABLE IF NOT EXISTS batchq_dependency (
    parent_id BIGINT UNSIGNED NOT NULL,
    child_id  BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (parent_id, child_id),
    KEY batchq_dependency_child (child_id)
) ENGINE = InnoDB;
