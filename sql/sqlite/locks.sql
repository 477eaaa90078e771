-- Locks and semaphores (batchq.coordination.locks) on SQLite, by name. Times are UTC text from strftime()
-- ('now' is the database's clock, the one host's), compared as text: the table's CHECK keeps
-- expire_at in the one form that sorts as time. A row is held while its state is not 'free' and
-- its expire_at is in the future; a holder is named by lock_by (owner) and its acquisition by
-- token, so renew and release touch the row only if nobody took it since.

-- name: lock_take
-- Take the first slot below limit that is free or expired, in one atomic statement; the token grows.
UPDATE batchq_lock
SET lock_by = :owner, state = 'locked', token = token + 1,
    expire_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :ttl)),
    taken_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), renewed_at = NULL
WHERE rowid = (
    SELECT rowid FROM batchq_lock
    WHERE name = :name AND slot < :limit
      AND (state = 'free' OR expire_at <= strftime('%Y-%m-%d %H:%M:%f', 'now'))
      AND token < 9223372036854775807
    ORDER BY slot
    LIMIT 1
)
RETURNING slot, token;

-- name: lock_slots_create
-- One slot of a name, free, if it does not exist yet (an existing row is left as it is).
INSERT INTO batchq_lock (name, slot, state, expire_at, token)
VALUES (:name, :slot, 'free', strftime('%Y-%m-%d %H:%M:%f', 'now'), 0)
ON CONFLICT (name, slot) DO NOTHING;

-- name: lock_rows
-- Every slot of one name, with whether it is held and for how long yet, on the database's clock.
SELECT slot, lock_by, state, token,
       (state <> 'free' AND expire_at > strftime('%Y-%m-%d %H:%M:%f', 'now')) AS held,
       round((julianday(expire_at) - julianday('now')) * 86400.0, 3) AS expires_in
FROM batchq_lock
WHERE name = :name
ORDER BY slot;

-- name: lock_renew
-- Push a holding's expiry to ttl from now; 0 rows when it is no longer this acquisition's.
UPDATE batchq_lock
SET state = 'extended', expire_at = strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.6f seconds', :ttl)),
    renewed_at = strftime('%Y-%m-%d %H:%M:%f', 'now')
WHERE name = :name AND slot = :slot AND lock_by = :owner AND token = :token AND state <> 'free';

-- name: lock_release
-- Free a holding; 0 rows when it is no longer this acquisition's. lock_by stays: the last holder.
UPDATE batchq_lock
SET state = 'free'
WHERE name = :name AND slot = :slot AND lock_by = :owner AND token = :token AND state <> 'free';

-- name: lock_force_release
-- An operator frees every slot of a name, whoever holds it; its holders get LockLost.
UPDATE batchq_lock SET state = 'free' WHERE name = :name AND state <> 'free';

-- name: locks_list
-- Every lock and semaphore slot, by name and slot, with the database's view of its time left
-- (to the millisecond, the clock's resolution: julianday's floats would add a few ULPs).
SELECT name, slot, lock_by, state, token, expire_at, taken_at, renewed_at,
       (state <> 'free' AND expire_at > strftime('%Y-%m-%d %H:%M:%f', 'now')) AS held,
       round((julianday(expire_at) - julianday('now')) * 86400.0, 3) AS expires_in
FROM batchq_lock
ORDER BY name, slot;
