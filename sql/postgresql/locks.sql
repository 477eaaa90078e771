-- Locks and semaphores (batchq.coordination.locks) on PostgreSQL, by name (psycopg paramstyle). Times are
-- timestamptz against clock_timestamp(), the server's clock. A row is held while its state is
-- not 'free' and its expire_at is in the future; a holder is named by lock_by (owner) and its
-- acquisition by token, so renew and release touch the row only if nobody took it since.

-- name: lock_take
-- Take the first slot below limit that is free or expired, in one atomic statement; the token
-- grows. SKIP LOCKED: a slot another acquirer is taking right now is passed over, not waited on.
UPDATE batchq_lock AS l
SET lock_by = %(owner)s, state = 'locked', token = l.token + 1,
    expire_at = clock_timestamp() + %(ttl)s::float8 * interval '1 second',
    taken_at = clock_timestamp(), renewed_at = NULL
WHERE (l.name, l.slot) = (
    SELECT name, slot FROM batchq_lock
    WHERE name = %(name)s AND slot < %(limit)s
      AND (state = 'free' OR expire_at <= clock_timestamp())
      AND token < 9223372036854775807
    ORDER BY slot
    LIMIT 1
    FOR UPDATE SKIP LOCKED
)
RETURNING l.slot, l.token;

-- name: lock_slots_create
-- One slot of a name, free, if it does not exist yet (an existing row is left as it is).
INSERT INTO batchq_lock (name, slot, state, expire_at, token)
VALUES (%(name)s, %(slot)s, 'free', clock_timestamp(), 0)
ON CONFLICT (name, slot) DO NOTHING;

-- name: lock_rows
-- Every slot of one name, with whether it is held and for how long yet, on the server's clock.
SELECT slot, lock_by, state, token,
       (state <> 'free' AND expire_at > clock_timestamp()) AS held,
       EXTRACT(EPOCH FROM expire_at - clock_timestamp())::float8 AS expires_in
FROM batchq_lock
WHERE name = %(name)s
ORDER BY slot;

-- name: lock_renew
-- Push a holding's expiry to ttl from now; 0 rows when it is no longer this acquisition's.
UPDATE batchq_lock
SET state = 'extended', expire_at = clock_timestamp() + %(ttl)s::float8 * interval '1 second',
    renewed_at = clock_timestamp()
WHERE name = %(name)s AND slot = %(slot)s AND lock_by = %(owner)s AND token = %(token)s
  AND state <> 'free';

-- name: lock_release
-- Free a holding; 0 rows when it is no longer this acquisition's. lock_by stays: the last holder.
UPDATE batchq_lock
SET state = 'free'
WHERE name = %(name)s AND slot = %(slot)s AND lock_by = %(owner)s AND token = %(token)s
  AND state <> 'free';

-- name: lock_force_release
-- An operator frees every slot of a name, whoever holds it; its holders get LockLost.
UPDATE batchq_lock SET state = 'free' WHERE name = %(name)s AND state <> 'free';

-- name: locks_list
-- Every lock and semaphore slot, by name and slot, with the server's view of its time left.
SELECT name, slot, lock_by, state, token, expire_at, taken_at, renewed_at,
       (state <> 'free' AND expire_at > clock_timestamp()) AS held,
       EXTRACT(EPOCH FROM expire_at - clock_timestamp())::float8 AS expires_in
FROM batchq_lock
ORDER BY name, slot;
