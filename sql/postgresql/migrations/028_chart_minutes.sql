-- Dashboard charts (issue 28): one row per queue and minute (Unix time / 60 on the database's
-- clock), written by `batchq tick` once a minute, off the job path (batchq.charts): the jobs that
-- finished and failed in that minute (NULL: not counted) and the queue's depth and oldest due
-- age when it was sampled (NULL: not sampled). The writer deletes minutes past its retention.
-- A new table: nothing live is touched.
CREATE TABLE IF NOT EXISTS batchq_chart_minute (
    queue              TEXT             NOT NULL,
    minute             BIGINT           NOT NULL,
    finished           INTEGER          NULL,
    failed             INTEGER          NULL,
    depth              BIGINT           NULL,
    oldest_age_seconds DOUBLE PRECISION NULL,
    PRIMARY KEY (queue, minute)
);
-- The page's range and the writer's prune and last-sample lookups walk minutes of every queue.
CREATE INDEX IF NOT EXISTS batchq_chart_minute_minute ON batchq_chart_minute (minute);
