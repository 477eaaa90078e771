-- Locks and semaphores (batchq.locks): one row per lock, several rows (slots 0 .. limit-1) per
-- semaphore, after seed 003's improved lock table. A row is taken by one atomic UPDATE where it
-- is free or its expire_at has passed on the database's clock (strftime 'now'); expire_at is the
-- only time that decides, taken_at and renewed_at are there for a human. token, the fencing
-- token, grows by one on every acquisition of the row.
-- SQLite stores any value in any column, so the checks hold what the other dialects' types do:
-- whole numbers where numbers go, and expire_at in the one text form that sorts as time
-- ('YYYY-MM-DD HH:MM:SS.SSS', UTC), since it is compared as text (IS: text strftime cannot
-- read gives NULL, which a CHECK would let through).
CREATE TABLE IF NOT EXISTS batchq_lock (
    name       TEXT    NOT NULL,
    slot       INTEGER NOT NULL DEFAULT 0 CHECK (typeof(slot) = 'integer' AND slot >= 0),
    lock_by    TEXT    NULL,
    state      TEXT    NOT NULL DEFAULT 'free' CHECK (state IN ('free', 'locked', 'extended')),
    expire_at  TEXT    NOT NULL CHECK (expire_at IS strftime('%Y-%m-%d %H:%M:%f', expire_at)),
    taken_at   TEXT    NULL,
    renewed_at TEXT    NULL,
    token      INTEGER NOT NULL DEFAULT 0 CHECK (typeof(token) = 'integer' AND token >= 0),
    PRIMARY KEY (name, slot)
);
