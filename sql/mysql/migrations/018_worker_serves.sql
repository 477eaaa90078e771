-- A worker's row lists every queue it serves (`serves`, the names joined by commas): a worker of
-- many long queue names (64 characters each) overflowed VARCHAR(2000) and could not start.
-- MEDIUMTEXT has room for any number of queues a command line can name.
ALTER TABLE batchq_worker MODIFY serves MEDIUMTEXT NOT NULL;
