-- Topic routing by pattern (PGMQ's bind_topic / send_topic, issue 28): a binding ties a pattern
-- of dot-separated words ('*' one word, '#' any run) to an existing message queue; send_topic
-- sends to every queue with a matching binding. A new table: nothing live is touched.
CREATE TABLE IF NOT EXISTS batchq_mq_binding (
    pattern    TEXT NOT NULL,
    queue      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (pattern, queue)
);
-- drop_queue removes a queue's bindings; list_topic_bindings(queue).
CREATE INDEX IF NOT EXISTS batchq_mq_binding_queue ON batchq_mq_binding (queue);
