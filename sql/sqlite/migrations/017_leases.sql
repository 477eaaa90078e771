-- Lease liveness, for servers (`?liveness=lease` in a MySQL or PostgreSQL URL): a worker shows it
-- is alive by a row it renews. SQLite tells a worker alive by its process, on its own host; the
-- table is here so that every dialect has the same schema.
CREATE TABLE IF NOT EXISTS batchq_lease (
    owner      TEXT NOT NULL PRIMARY KEY,
    expire_at  TEXT NOT NULL,
    renewed_at TEXT NOT NULL
);
