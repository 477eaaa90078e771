-- Lease liveness (`?liveness=lease`): a worker shows it is alive by a row it renews, not by a lock
-- its session holds. For servers that share rows but not sessions (a Galera cluster, where
-- GET_LOCK is local to one node) or a pooler that hands a session to whoever is next (PgBouncer
-- in transaction mode). expire_at is on the server's clock and is the only time that decides: a
-- worker whose lease expired is dead to gc-processing, wherever it runs. The row goes when the
-- worker exits; gc-processing prunes the rows of workers that died long ago.
CREATE TABLE IF NOT EXISTS batchq_lease (
    owner      VARCHAR(255) NOT NULL,
    expire_at  DATETIME(6)  NOT NULL,
    renewed_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (owner)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
