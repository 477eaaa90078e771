-- Queries of the Django Tasks backend (batchq.contrib.django).

-- name: django_job_call
-- What a job calls, from its row while it waits, runs or has failed, else from its kept record.
SELECT task, payload, serializer, 0 AS kept FROM batchq_job WHERE id = %(id)s
UNION ALL
SELECT task, payload, serializer, 1 AS kept FROM batchq_history WHERE id = %(id)s
ORDER BY kept;
