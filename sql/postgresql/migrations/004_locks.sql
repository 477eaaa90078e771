-- Locks and semaphores (batchq.locks): one row per lock, several rows (slots 0 .. limit-1) per
-- semaphore, after seed 003's improved lock table. A row is taken by one atomic UPDATE where it
-- is free or its expire_at has passed on the server's clock (clock_timestamp()); expire_at is
-- the only time that decides, taken_at and renewed_at are there for a human. token, the fencing
-- token, grows by one on every acquisition of the row. Times are finite: 'infinity' would make
-- "expires in" unanswerable.
CREATE TABLE IF NOT EXISTS batchq_lock (
    name       TEXT        NOT NULL,
    slot       INTEGER     NOT NULL DEFAULT 0 CHECK (slot >= 0),
    lock_by    TEXT        NULL,
    state      TEXT        NOT NULL DEFAULT 'free' CHECK (state IN ('free', 'locked', 'extended')),
    expire_at  TIMESTAMPTZ NOT NULL CHECK (isfinite(expire_at)),
    taken_at   TIMESTAMPTZ NULL CHECK (isfinite(taken_at)),
    renewed_at TIMESTAMPTZ NULL CHECK (isfinite(renewed_at)),
    token      BIGINT      NOT NULL DEFAULT 0 CHECK (token >= 0),
    PRIMARY KEY (name, slot)
);
