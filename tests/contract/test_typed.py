"""Typed queues on every backend: refusal before any write, errors that name the path and the
rule, rows written around batchq failed or archived with the reason, alter_queue refused while
non-matching messages wait (unless forced), and producers in other processes learning a new type."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any, TypedDict

import pytest

from batchq import MessageQueue, Queue
from batchq.errors import ConfigError, PayloadError, PayloadInvalid
from batchq.runtime.worker import RunOptions, Worker
from tests.support.db import job_rows, run_query
from tests.support.processes import APPS_DIR, batchq_env

ORDERS = "orders"
ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
                "required": ["sku", "qty"],
            },
        },
    },
    "required": ["id", "items"],
}
GOOD = {"id": 1, "items": [{"sku": "a", "qty": 1}]}
BAD = {"id": 1, "items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}, {"sku": "c", "qty": -1}]}
ANY_N = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
NATURAL_N = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]}


@dataclass
class Item:
    sku: str
    qty: int


@dataclass
class Order:
    id: int
    items: list[Item]
    note: str | None = None


class Ping(TypedDict):
    host: str
    port: int


@pytest.fixture
def typed_mq(db_url: str) -> Any:
    m = MessageQueue(db_url)
    m.create_queue(ORDERS, schema=ORDER)
    yield m
    m.close()


def messages_in(queue: Any, name: str = ORDERS) -> list[Any]:
    return [json.loads(text) for _, text in run_query(queue, "message_texts", {"queue": name})]


# -- message queues ------------------------------------------------------------------------


def test_send_refuses_before_any_write_naming_path_and_rule(typed_mq: MessageQueue) -> None:
    with pytest.raises(PayloadInvalid) as caught:
        typed_mq.send(ORDERS, BAD)
    assert str(caught.value).endswith("$.items[2].qty: -1 is less than the minimum of 1")
    assert (caught.value.path, caught.value.rule) == ("$.items[2].qty", "-1 is less than the minimum of 1")
    with pytest.raises(PayloadInvalid, match=r"^message 3 of 3 .*\$: \"items\" is a required property"):
        typed_mq.send_batch(ORDERS, [GOOD, GOOD, {"id": 3}])
    assert messages_in(typed_mq) == []
    assert typed_mq.metrics(ORDERS).total_messages == 0  # not even counted
    assert len(typed_mq.send_batch(ORDERS, [GOOD, GOOD])) == 2
    assert isinstance(caught.value, ConfigError) and isinstance(caught.value, PayloadError)


def test_a_second_sender_object_learns_the_type_on_its_first_send(
    db_url: str, typed_mq: MessageQueue
) -> None:
    other = MessageQueue(db_url)  # has never looked at the queue: sends as if untyped, is told
    with pytest.raises(PayloadInvalid, match=r"\$\.items\[2\]\.qty"):
        other.send(ORDERS, BAD)
    assert other.send(ORDERS, GOOD) > 0
    assert messages_in(typed_mq) == [GOOD]
    other.close()


def test_types_from_a_dataclass_and_a_typeddict(db_url: str) -> None:
    m = MessageQueue(db_url)
    m.create_queue("dc", schema=Order)
    m.create_queue("td", schema=Ping)
    m.send("dc", {"id": 1, "items": [{"sku": "a", "qty": 2}]})
    with pytest.raises(PayloadInvalid, match=r"\$\.items\[0\]\.qty: \"2\" is not of type \"integer\""):
        m.send("dc", {"id": 1, "items": [{"sku": "a", "qty": "2"}]})
    with pytest.raises(PayloadInvalid, match=r"\$: Additional properties are not allowed"):
        m.send("dc", {"id": 1, "items": [], "extra": True})  # a dataclass takes no other field
    m.send("td", {"host": "h", "port": 1, "extra": True})  # a TypedDict is open
    with pytest.raises(PayloadInvalid, match=r"\$: \"port\" is a required property"):
        m.send("td", {"host": "h"})
    assert m.queue_schema("td") == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"host": {"type": "string"}, "port": {"type": "integer"}},
        "required": ["host", "port"],
    }
    m.close()


def test_bad_schemas_are_refused_before_anything_is_written(db_url: str) -> None:
    m = MessageQueue(db_url)
    with pytest.raises(ConfigError, match="bad JSON Schema"):
        m.create_queue("x", schema={"type": "objectx"})
    with pytest.raises(ConfigError, match="remote \\$ref"):
        m.create_queue("x", schema={"$ref": "https://example.com/schema.json"})
    with pytest.raises(ConfigError, match="cannot derive a JSON Schema"):
        m.create_queue("x", schema=int)
    assert [q.queue_name for q in m.list_queues()] == []
    m.close()


def test_create_queue_of_another_type_points_at_alter_queue(typed_mq: MessageQueue) -> None:
    assert typed_mq.create_queue(ORDERS, schema=ORDER) is False  # the same type: idempotent
    with pytest.raises(ConfigError, match="alter_queue"):
        typed_mq.create_queue(ORDERS, schema=ANY_N)


def test_a_hand_written_message_is_archived_with_the_reason_not_read(typed_mq: MessageQueue) -> None:
    typed_mq.send(ORDERS, GOOD)
    run_query(typed_mq, "message_insert_by_hand", {"queue": ORDERS, "message": json.dumps(BAD)})
    run_query(typed_mq, "message_insert_by_hand", {"queue": ORDERS, "message": '"just text"'})
    typed_mq.send(ORDERS, GOOD)
    typed_mq.backend.conn.commit()
    read = typed_mq.read(ORDERS, 30, qty=10)
    assert [m.message for m in read] == [GOOD, GOOD]
    reasons = [reason for _, reason in run_query(typed_mq, "archive_reasons", {"queue": ORDERS})]
    assert reasons == [
        "message does not match the queue's type: $.items[2].qty: -1 is less than the minimum of 1",
        'message does not match the queue\'s type: $: "just text" is not of type "object"',
    ]


def test_read_fills_up_to_qty_past_archived_messages(typed_mq: MessageQueue) -> None:
    run_query(typed_mq, "message_insert_by_hand", {"queue": ORDERS, "message": json.dumps(BAD)})
    typed_mq.backend.conn.commit()
    typed_mq.send_batch(ORDERS, [GOOD, GOOD])
    assert len(typed_mq.read(ORDERS, 30, qty=2)) == 2


def test_pop_archives_a_message_that_does_not_match(typed_mq: MessageQueue) -> None:
    run_query(typed_mq, "message_insert_by_hand", {"queue": ORDERS, "message": json.dumps(BAD)})
    typed_mq.backend.conn.commit()
    typed_mq.send(ORDERS, GOOD)
    popped = typed_mq.pop(ORDERS)
    assert popped is not None and popped.message == GOOD
    [(_, reason)] = run_query(typed_mq, "archive_reasons", {"queue": ORDERS})
    assert reason.endswith("$.items[2].qty: -1 is less than the minimum of 1")
    assert typed_mq.pop(ORDERS) is None


def test_alter_queue_is_refused_while_messages_fail_the_new_type(typed_mq: MessageQueue) -> None:
    typed_mq.send_batch(ORDERS, [GOOD, {"id": 2, "items": []}])
    stricter = {**ORDER, "properties": {**ORDER["properties"], "items": {"type": "array", "minItems": 1}}}
    with pytest.raises(ConfigError, match=r"message \d+ of queue 'orders' does not match .*force=True"):
        typed_mq.alter_queue(ORDERS, schema=stricter)
    assert typed_mq.queue_schema(ORDERS) == ORDER  # unchanged
    assert typed_mq.alter_queue(ORDERS, schema=stricter, force=True) == 1
    assert typed_mq.queue_schema(ORDERS) == stricter
    with pytest.raises(PayloadInvalid, match=r"\$\.items: \[\] has less than 1 item"):
        typed_mq.send(ORDERS, {"id": 3, "items": []})
    assert [m.message for m in typed_mq.read(ORDERS, 30, qty=5)] == [GOOD]  # the other: archived
    assert typed_mq.alter_queue(ORDERS, schema=None) == 0  # untyped again
    typed_mq.send(ORDERS, "anything")


def test_alter_queue_of_a_missing_queue(db_url: str) -> None:
    m = MessageQueue(db_url)
    with pytest.raises(Exception, match="does not exist"):
        m.alter_queue("nope", schema=ANY_N)
    m.close()


def test_send_with_conn_on_a_typed_queue(db_url: str, typed_mq: MessageQueue) -> None:
    from tests.support.db import app_connection

    conn = app_connection(db_url)
    other = MessageQueue(db_url)
    with pytest.raises(PayloadInvalid):
        other.send(ORDERS, BAD, conn=conn)  # learns the type on conn, refuses
    other.send(ORDERS, GOOD, conn=conn)
    conn.commit()
    conn.close()
    assert messages_in(typed_mq) == [GOOD]
    other.close()


# -- job queues ------------------------------------------------------------------------------


def test_enqueue_refuses_before_any_write(queue: Queue) -> None:
    assert queue.create_queue(ORDERS, schema=ORDER) is True
    assert queue.create_queue(ORDERS, schema=ORDER) is False
    with pytest.raises(PayloadInvalid) as caught:
        queue.enqueue("jobs:noop", BAD, queue=ORDERS)
    assert str(caught.value) == (
        "payload does not match the type of queue 'orders': $.items[2].qty: -1 is less than the minimum of 1"
    )
    with pytest.raises(
        PayloadInvalid, match=r"^job 2 of 3 does not match .*\$: \"id\" is a required property"
    ):
        queue.enqueue_many("jobs:noop", [GOOD, {"items": []}, GOOD], queue=ORDERS)
    with pytest.raises(PayloadInvalid, match=r"\$: null is not of type \"object\""):
        queue.enqueue("jobs:noop", None, queue=ORDERS)
    with pytest.raises(PayloadError, match="serializer='pickle' is refused"):
        queue.enqueue("jobs:noop", GOOD, queue=ORDERS, serializer="pickle")
    assert job_rows(queue) == []
    queue.enqueue("jobs:noop", GOOD, queue=ORDERS)
    assert queue.enqueue_many("jobs:noop", [GOOD, GOOD], queue=ORDERS) == 2
    assert len(job_rows(queue)) == 3
    queue.enqueue("jobs:noop", BAD, queue="default")  # other queues stay untyped


def test_a_hand_written_job_fails_at_once_with_the_reason_never_run(queue: Queue, tmp_path: Any) -> None:
    queue.create_queue("default", schema=ANY_N)
    queue.enqueue("jobs:noop", {"n": 1})
    run_query(queue, "job_insert_due_now", {"task": "jobs:noop", "payload": b'{"n": "x"}', "max_errors": 5})
    queue.backend.conn.commit()
    summary = Worker(queue, RunOptions(queues=("default",))).run()
    assert (summary.succeeded, summary.errors) == (1, 1)
    [row] = job_rows(queue)
    assert (row["status"], row["error_count"]) == ("failed", 1)  # no retry would read another payload
    assert row["last_error"] == 'payload does not match the queue\'s type: $.n: "x" is not of type "integer"'


def test_alter_job_queue_refused_while_jobs_wait_then_forced(queue: Queue) -> None:
    queue.enqueue("jobs:noop", {"n": -1})
    queue.enqueue("jobs:noop", {"n": 2})
    with pytest.raises(
        ConfigError, match=r"job \d+ waiting in queue 'default' does not match .*minimum of 0"
    ):
        queue.alter_queue("default", schema=NATURAL_N)
    assert queue.queue_schema("default") is None
    assert queue.alter_queue("default", schema=NATURAL_N, force=True) == 1
    summary = Worker(queue, RunOptions(queues=("default",))).run()
    assert (summary.succeeded, summary.errors) == (1, 1)
    with pytest.raises(PayloadInvalid):
        queue.enqueue("jobs:noop", {"n": -1})


def test_pickled_jobs_waiting_block_a_type(queue: Queue) -> None:
    queue.enqueue("jobs:noop", {"n": 1}, serializer="pickle")
    with pytest.raises(ConfigError, match="'pickle'"):
        queue.alter_queue("default", schema=ANY_N)


# -- other processes ---------------------------------------------------------------------------


def start_sender(db_url: str, kind: str, queue: str, count: int, pause: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(APPS_DIR / "typed_sender.py"), db_url, kind, queue, str(count), str(pause)],
        stdout=subprocess.PIPE,
        text=True,
        env=batchq_env(db_url),
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_a_job_producer_in_another_process_learns_a_new_type(queue: Queue, db_url: str) -> None:
    """Job producers re-read a queue's type at most every second (CACHE_SECONDS)."""
    queue.create_queue("default", schema=ANY_N)
    proc = start_sender(db_url, "jobs", "default", 400, 0.01)
    assert proc.stdout is not None
    lines = [proc.stdout.readline().strip() for _ in range(20)]
    assert set(lines) == {"ok"}  # negative n fits ANY_N
    queue.alter_queue("default", schema=NATURAL_N, force=True)
    altered = time.monotonic()
    while (line := proc.stdout.readline().strip()) != "refused":
        assert line == "ok", line
    assert time.monotonic() - altered < 3
    proc.kill()
    proc.wait()


def test_alter_queue_while_producers_send(typed_mq: MessageQueue, db_url: str) -> None:
    """Several sender processes send {n} with n alternately positive and negative; the type turns
    to n >= 0 mid-way. alter_queue waits out the sends in flight: after it returns, no sender, in
    any process, commits a negative n, with no re-read of the type on the sends' path."""
    typed_mq.alter_queue(ORDERS, schema=ANY_N)
    senders = [start_sender(db_url, "mq", ORDERS, 150, 0.002) for _ in range(3)]

    def negatives() -> int:
        return sum(1 for m in messages_in(typed_mq) if m["n"] < 0)

    while negatives() < 5:
        time.sleep(0.01)
    with pytest.raises(ConfigError, match="does not match the new type"):
        typed_mq.alter_queue(ORDERS, schema=NATURAL_N)
    typed_mq.alter_queue(ORDERS, schema=NATURAL_N, force=True)
    after_alter = negatives()
    outputs = [proc.communicate(timeout=120)[0].split() for proc in senders]
    assert all(out[-1] == "done" for out in outputs)
    assert sum(out.count("refused") for out in outputs) > 0
    assert negatives() == after_alter  # none committed after the type changed
    positives = [m["n"] for m in messages_in(typed_mq) if m["n"] >= 0]
    assert len(positives) == 3 * 75
