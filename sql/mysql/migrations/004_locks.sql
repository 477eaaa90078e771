-- Locks and semaphores (batchq.locks): one row per lock, several rows (slots 0 .. limit-1) per
-- semaphore, after seed 003's improved lock table. A row is taken by one atomic UPDATE where it
-- is free or its expire_at has passed on the server's clock (UTC_TIMESTAMP(6)); expire_at is the
-- only time that decides, taken_at and renewed_at are there for a human. token, the fencing
-- token, grows by one on every acquisition of the row. utf8mb4_bin: names are case-sensitive,
-- as on PostgreSQL and SQLite ('Report' and 'report' are two locks).
CREATE TABLE IF NOT EXISTS batchq_lock (
    name       VARCHAR(128) NOT NULL,
    slot       INT          NOT NULL DEFAULT 0,
    lock_by    VARCHAR(255) NULL,
    state      ENUM('free', 'locked', 'extended') NOT NULL DEFAULT 'free',
    expire_at  DATETIME(6)  NOT NULL,
    taken_at   DATETIME(6)  NULL,
    renewed_at DATETIME(6)  NULL,
    token      BIGINT       NOT NULL DEFAULT 0,
    PRIMARY KEY (name, slot),
    CONSTRAINT batchq_lock_slot CHECK (slot >= 0),
    CONSTRAINT batchq_lock_token CHECK (token >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
