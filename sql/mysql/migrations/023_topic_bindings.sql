-- Topic routing by pattern (PGMQ's bind_topic / send_topic, issue 28): a binding ties a pattern
-- of dot-separated words ('*' one word, '#' any run) to an existing message queue; send_topic
-- sends to every queue with a matching binding. A new table: nothing live is touched.
CREATE TABLE IF NOT EXISTS batchq_mq_binding (
    pattern    VARCHAR(255) NOT NULL,
    queue      VARCHAR(64)  NOT NULL,
    created_at DATETIME(6)  NOT NULL,
    PRIMARY KEY (pattern, queue),
    KEY batchq_mq_binding_queue (queue)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin;
