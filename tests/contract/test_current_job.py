"""batchq.current_job(): the job a worker is calling, in its task (and only there)."""

from __future__ import annotations

from datetime import datetime

import batchq
from batchq import Queue
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import run_query


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


def test_a_scheduled_task_sees_its_schedule_and_slot_and_which_try(db_url: str) -> None:
    queue = Queue(db_url, task_modules=["current_job_tasks"])
    try:
        queue.schedule("hourly", "0 * * * *", "current_job_tasks:my_slot", tz="Europe/Paris")
        at = int(queue.schedules.server_now()) // 3600 * 3600  # this hour's slot: due
        run_query(queue, "schedule_set_next_exec", {"name": "hourly", "at": at})
        [scheduled] = queue.tick().enqueued
        plain = queue.enqueue("current_job_tasks:my_slot", {"batchq_slot": "not a time"}, keep_result=True)
        Worker(queue, RunOptions(keep=True)).run()  # every result kept, the scheduled one's too
        seen = queue.result(scheduled.job_id).value
        assert (seen["schedule"], seen["attempt"]) == ("hourly", 1)
        slot = datetime.fromisoformat(seen["slot"])
        assert slot.timestamp() == at and slot.utcoffset() is not None  # in the schedule's zone
        assert queue.result(plain).value == {"schedule": None, "slot": None, "attempt": 1}
    finally:
        queue.close()
