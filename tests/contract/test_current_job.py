"""batchq.current_job(): the job a worker is calling, in its task (and only there)."""

from __future__ import annotations

import batchq
from batchq import Queue
from batchq.worker import RunOptions, Worker


def test_a_task_sees_its_job(db_url: str) -> None:
    queue = Queue(db_url, task_modules=["current_job_tasks"])
    try:
        plain = queue.enqueue("current_job_tasks:whoami", {"x": 1}, queue="mail", keep_result=True)
        async_id = queue.enqueue("current_job_tasks:whoami_async", keep_result=True)
        retried = queue.enqueue("current_job_tasks:fails_first", max_errors=2, keep_result=True)
        Worker(queue, RunOptions(queues=("mail", "default"), backoff_base=0)).run()
        Worker(queue, RunOptions(queues=("default",), backoff_base=0)).run()
        assert queue.result(plain).value == {
            "id": plain,
            "queue": "mail",
            "task": "current_job_tasks:whoami",
            "try": 1,
        }
        assert queue.result(async_id).value == async_id  # asyncio.run keeps the context
        assert queue.result(retried).value == 2
    finally:
        queue.close()
    assert batchq.current_job() is None  # outside a call
