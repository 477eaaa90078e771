-- Locks and semaphores (batchq.coordination.locks) on MySQL/MariaDB, by name (PyMySQL paramstyle). Times are
-- UTC DATETIME(6) against UTC_TIMESTAMP(6), the server's clock. A row is held while its state is
-- not 'free' and its expire_at is in the future; a holder is named by lock_by (owner) and its
-- acquisition by token, so renew and release touch the row only if nobody took it since.
-- MySQL has no UPDATE ... RETURNING: lock_take is followed by lock_taken (a MySQL extra).
-- Holders are compared as BINARY: utf8mb4_bin is PAD SPACE, which ignores trailing spaces.

-- name: lock_take
-- Take the first slot below limit that is free or expired, in one atomic statement; the token grows.
UPDATE batchq_lock
SET lock_by = %(owner)s, state = 'locked', token = token + 1,
    expire_at = UTC_TIMESTAMP(6) + INTERVAL ROUND(%(ttl)s * 1000000) MICROSECOND,
    taken_at = UTC_TIMESTAMP(6), renewed_at = NULL
WHERE name = %(name)s AND slot < %(limit)s
  AND (state = 'free' OR expire_at <= UTC_TIMESTAMP(6))
  AND token < 9223372036854775807
ORDER BY slot
LIMIT 1;

-- name: lock_taken
-- The slot and token lock_take just gave this owner, in its transaction (the newest it holds of
-- the name). Expired or not: a ttl shorter than a round trip has passed already, yet it was taken.
SELECT slot, token FROM batchq_lock
WHERE name = %(name)s AND BINARY lock_by = %(owner)s AND state = 'locked'
ORDER BY taken_at DESC, slot
LIMIT 1;

-- name: lock_slots_create
-- One slot of a name, free, if it does not exist yet (an existing row is left as it is; IGNORE,
-- as mq_queue_create: the backend sends these rows as one multi-row INSERT).
INSERT IGNORE INTO batchq_lock (name, slot, state, expire_at, token)
VALUES (%(name)s, %(slot)s, 'free', UTC_TIMESTAMP(6), 0);

-- name: lock_rows
-- Every slot of one name, with whether it is held and for how long yet, on the server's clock.
SELECT slot, lock_by, state, token,
       (state <> 'free' AND expire_at > UTC_TIMESTAMP(6)) AS held,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expire_at) / 1e6 AS expires_in
FROM batchq_lock
WHERE name = %(name)s
ORDER BY slot;

-- name: lock_renew
-- Push a holding's expiry to ttl from now; 0 rows when it is no longer this acquisition's.
UPDATE batchq_lock
SET state = 'extended', expire_at = UTC_TIMESTAMP(6) + INTERVAL ROUND(%(ttl)s * 1000000) MICROSECOND,
    renewed_at = UTC_TIMESTAMP(6)
WHERE name = %(name)s AND slot = %(slot)s AND BINARY lock_by = %(owner)s AND token = %(token)s
  AND state <> 'free';

-- name: lock_release
-- Free a holding; 0 rows when it is no longer this acquisition's. lock_by stays: the last holder.
UPDATE batchq_lock
SET state = 'free'
WHERE name = %(name)s AND slot = %(slot)s AND BINARY lock_by = %(owner)s AND token = %(token)s
  AND state <> 'free';

-- name: lock_force_release
-- An operator frees every slot of a name, whoever holds it; its holders get LockLost.
UPDATE batchq_lock SET state = 'free' WHERE name = %(name)s AND state <> 'free';

-- name: locks_list
-- Every lock and semaphore slot, by name and slot, with the server's view of its time left.
SELECT name, slot, lock_by, state, token, expire_at, taken_at, renewed_at,
       (state <> 'free' AND expire_at > UTC_TIMESTAMP(6)) AS held,
       TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expire_at) / 1e6 AS expires_in
FROM batchq_lock
ORDER BY name, slot;
