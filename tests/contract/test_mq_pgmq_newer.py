"""PGMQ's newer operations on every backend: pop(qty), read_grouped_head (FIFO by group) and
topic routing by pattern (bind_topic, send_topic, test_routing).

The cases are ported from PGMQ's own SQL tests (github.com/pgmq/pgmq, pgmq-extension/test/sql):
test_pop in base.sql, fifo_per_group_tests.sql (read_grouped_head), and topic_tests.sql; each
test names the PGMQ case it follows. PGMQ's message ids start at 1 per queue; here they are
compared by position in what was sent."""

from __future__ import annotations

from typing import Any

import pytest

from batchq import ConfigError, MessageQueue, QueueNotFound
from batchq.mq.routing import check_pattern, check_routing_key, compiled
from tests.support.messages import Q, ids

GROUP = "x-pgmq-group"


def _send(mq: MessageQueue, queue: str, msg: Any, group: str | None = None) -> int:
    return mq.send(queue, msg, headers=None if group is None else {GROUP: group})


def _expire_holds(mq: MessageQueue, queue: str, msg_ids: list[int]) -> None:
    """PGMQ's `UPDATE q SET vt = now() - 1s`: make held messages visible again."""
    for msg_id in msg_ids:
        assert mq.set_vt(queue, msg_id, 0) is not None


# -- pop(qty): base.sql test_pop -----------------------------------------------------------


def test_pop_of_an_empty_queue(mq: MessageQueue) -> None:
    assert mq.pop(Q) is None
    assert mq.pop(Q, 5) == []


def test_pop_one_then_several(mq: MessageQueue) -> None:
    """base.sql test_pop: pop() gives the first message; pop(10) the two left; pop(3) the next three."""
    sent = [mq.send(Q, "0") for _ in range(3)]
    first = mq.pop(Q)
    assert first is not None and first.msg_id == sent[0]
    assert ids(mq.pop(Q, 10)) == sent[1:]
    more = [mq.send(Q, str(n)) for n in (1, 2, 3)]
    popped = mq.pop(Q, 3)
    assert ids(popped) == more and [m.message for m in popped] == ["1", "2", "3"]
    assert mq.metrics(Q).queue_length == 0


def test_pop_qty_skips_held_and_delayed_messages(mq: MessageQueue) -> None:
    held, free1, free2 = (mq.send(Q, n) for n in range(3))
    mq.send(Q, "later", delay=3600)
    assert ids(mq.read(Q, vt=60)) == [held]
    assert ids(mq.pop(Q, 10)) == [free1, free2]
    assert mq.metrics(Q).queue_length == 2  # the held and the delayed one stay


@pytest.mark.parametrize("qty", [0, -1, 1001, True, 2.0, "3"])
def test_pop_refuses_a_bad_qty_before_anything_is_deleted(mq: MessageQueue, qty: Any) -> None:
    mq.send(Q, "x")
    with pytest.raises(ConfigError, match="bad qty"):
        mq.pop(Q, qty)
    assert mq.metrics(Q).queue_length == 1


def test_pop_qty_of_a_missing_queue_fails(mq: MessageQueue) -> None:
    with pytest.raises(QueueNotFound):
        mq.pop("nosuch", 3)


# -- read_grouped_head: fifo_per_group_tests.sql -------------------------------------------


def _three_groups(mq: MessageQueue) -> dict[str, int]:
    """A1 A2 A3 B1 B2 C1, as fifo_per_group_tests.sql sends them; name -> msg_id."""
    sent = {}
    for group, count in (("A", 3), ("B", 2), ("C", 1)):
        for n in range(1, count + 1):
            sent[f"{group}-{n}"] = _send(mq, Q, {"group": group, "message": n}, f"group_{group}")
    return sent


def _names(messages: list[Any]) -> list[str]:
    return [f"{m.message['group']}-{m.message['message']}" for m in messages]


def test_grouped_head_gives_one_message_per_group(mq: MessageQueue) -> None:
    """Asked for 4, it gives 3: the first of each of the 3 groups, in id order."""
    sent = _three_groups(mq)
    got = mq.read_grouped_head(Q, vt=10, qty=4)
    assert _names(got) == ["A-1", "B-1", "C-1"]
    _expire_holds(mq, Q, ids(got))
    assert _names(mq.read_grouped_head(Q, vt=10, qty=4)) == ["A-1", "B-1", "C-1"]
    assert len(sent) == 6


def test_grouped_head_reads_in_turn_and_then_nothing(mq: MessageQueue) -> None:
    """qty 2: A-1 and B-1, then C-1, then nothing while the heads are held."""
    _three_groups(mq)
    assert _names(mq.read_grouped_head(Q, vt=10, qty=2)) == ["A-1", "B-1"]
    assert _names(mq.read_grouped_head(Q, vt=10, qty=2)) == ["C-1"]
    assert mq.read_grouped_head(Q, vt=10, qty=2) == []


def test_grouped_head_messages_without_a_group_form_the_default_group(mq: MessageQueue) -> None:
    _send(mq, Q, {"group": "A", "message": 1}, "group_A")
    _send(mq, Q, {"group": "B", "message": 1}, "group_B")
    _send(mq, Q, {"group": "A", "message": 2}, "group_A")
    _send(mq, Q, {"group": "default", "message": 1})
    _send(mq, Q, {"group": "default", "message": 2})
    assert _names(mq.read_grouped_head(Q, vt=10, qty=4)) == ["A-1", "B-1", "default-1"]


def test_grouped_head_with_poll(mq: MessageQueue) -> None:
    """read_grouped_head_with_poll: heads only, one per group (g1 g2 g3 of n=1)."""
    for n, group in ((1, "g1"), (1, "g2"), (1, "g3"), (2, "g1"), (2, "g2")):
        _send(mq, Q, {"n": n}, group)
    got = mq.read_grouped_head_with_poll(Q, vt=10, qty=5, max_poll_seconds=1, poll_interval_ms=100)
    assert [m.headers[GROUP] for m in got if m.headers] == ["g1", "g2", "g3"]
    assert [m.message["n"] for m in got] == [1, 1, 1]


def test_grouped_head_next_message_comes_after_the_head_is_deleted(mq: MessageQueue) -> None:
    """The brief's rule: nothing of a group while its head is held; the next once it is gone,
    and again after the head's visibility runs out (the head, not the next)."""
    a1, a2 = _send(mq, Q, "a1", "A"), _send(mq, Q, "a2", "A")
    assert ids(mq.read_grouped_head(Q, vt=60, qty=10)) == [a1]
    assert mq.read_grouped_head(Q, vt=60, qty=10) == []
    _expire_holds(mq, Q, [a1])
    again = mq.read_grouped_head(Q, vt=60, qty=10)
    assert ids(again) == [a1] and again[0].read_ct == 2
    assert mq.delete(Q, a1)
    assert ids(mq.read_grouped_head(Q, vt=60, qty=10)) == [a2]


def test_grouped_head_a_delayed_head_blocks_its_group(mq: MessageQueue) -> None:
    _send(mq, Q, "later", "A")
    b1 = _send(mq, Q, "b1", "B")
    mq.set_vt(Q, mq.read_grouped_head(Q, vt=60, qty=1)[0].msg_id, 3600)  # A's head held long
    _send(mq, Q, "a2", "A")
    assert ids(mq.read_grouped_head(Q, vt=60, qty=10)) == [b1]


def test_grouped_head_empty_and_null_keys(mq: MessageQueue) -> None:
    """fifo_tests.sql's edge cases: an empty key is a group of its own; a JSON null is no key."""
    empty = mq.send(Q, "empty", headers={GROUP: ""})
    null = mq.send(Q, "null", headers={GROUP: None})
    plain = mq.send(Q, "plain")
    other = mq.send(Q, "other", headers={"trace": "x"})
    assert ids(mq.read_grouped_head(Q, vt=10, qty=10)) == [empty, null]
    assert mq.delete(Q, null)
    assert ids(mq.read_grouped_head(Q, vt=10, qty=10)) == [plain]
    assert mq.delete(Q, plain)
    assert ids(mq.read_grouped_head(Q, vt=10, qty=10)) == [other]


def test_grouped_head_refuses_bad_input_and_missing_queues(mq: MessageQueue) -> None:
    with pytest.raises(ConfigError, match="bad qty"):
        mq.read_grouped_head(Q, vt=10, qty=0)
    with pytest.raises(QueueNotFound):
        mq.read_grouped_head("nosuch", vt=10)


# -- topic routing: topic_tests.sql -----------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["logs.error", "app.user-service.auth", "system_events.db.connection_failed", "logs"]
)
def test_valid_routing_keys(key: str) -> None:
    assert check_routing_key(key) == key


@pytest.mark.parametrize(
    "key",
    ["", None, ".logs.error", "logs.error.", "logs..error", "logs.*", "logs.error!", "logs error", "a" * 256],
)
def test_invalid_routing_keys(key: Any) -> None:
    with pytest.raises(ConfigError, match="bad routing key"):
        check_routing_key(key)


@pytest.mark.parametrize(
    "pattern", ["logs.*", "logs.#", "*.error", "#.error", "app.*.#", "logs.error.fatal", "#", "*"]
)
def test_valid_patterns(pattern: str) -> None:
    assert check_pattern(pattern) == pattern


@pytest.mark.parametrize(
    "pattern",
    [
        "",
        None,
        ".logs.*",
        "logs.*.",
        "logs..error",
        "logs.**",
        "logs.##",
        "logs.*#",
        "logs.#*",
        "logs.error!",
        "a" * 256,
        "logs.(foo|bar)",
        "logs.[error]",
        "logs.error$",
    ],
)
def test_invalid_patterns(pattern: Any) -> None:
    with pytest.raises(ConfigError, match="bad topic pattern"):
        check_pattern(pattern)


@pytest.mark.parametrize(
    ("pattern", "regex"),
    [
        ("logs.error", r"logs\.error"),
        ("logs.*", r"logs\.[^.]+"),
        ("logs.#", r"logs\..*"),
        ("app.*.logs.#", r"app\.[^.]+\.logs\..*"),
    ],
)
def test_compiled_regex(pattern: str, regex: str) -> None:
    """PGMQ's compiled_regex, anchored here by fullmatch rather than ^...$."""
    assert compiled(pattern).pattern == regex


@pytest.fixture
def routed(mq: MessageQueue) -> MessageQueue:
    for n in (1, 2, 3):
        mq.create_queue(f"topic_queue_{n}")
    return mq


def _lengths(mq: MessageQueue, *queues: str) -> list[int]:
    return [mq.metrics(q).queue_length for q in queues]


def _keys(mq: MessageQueue, key: str) -> list[tuple[str, str]]:
    return [(b.pattern, b.queue) for b in mq.test_routing(key)]


def test_bind_topic_is_idempotent_and_unbind_says_whether_it_removed(routed: MessageQueue) -> None:
    mq = routed
    assert mq.bind_topic("orders.#", "topic_queue_1") is True
    assert [mq.bind_topic("logs.info", "topic_queue_1") for _ in range(3)] == [True, False, False]
    for pattern in ("events.*", "alerts.#", "system.startup"):
        mq.bind_topic(pattern, "topic_queue_2")
    assert len(mq.list_topic_bindings("topic_queue_2")) == 3
    mq.bind_topic("broadcasts.#", "topic_queue_1")
    mq.bind_topic("broadcasts.#", "topic_queue_2")
    assert [b.queue for b in mq.list_topic_bindings() if b.pattern == "broadcasts.#"] == [
        "topic_queue_1",
        "topic_queue_2",
    ]
    assert mq.unbind_topic("logs.info", "topic_queue_1") is True
    assert not [b for b in mq.list_topic_bindings("topic_queue_1") if b.pattern == "logs.info"]
    assert mq.unbind_topic("nonexistent.pattern", "topic_queue_1") is False


def test_bind_topic_refuses_a_missing_queue_and_a_bad_pattern(routed: MessageQueue) -> None:
    with pytest.raises(QueueNotFound):
        routed.bind_topic("logs.*", "nosuch")
    with pytest.raises(ConfigError, match="bad topic pattern"):
        routed.bind_topic("logs.**", "topic_queue_1")
    assert routed.list_topic_bindings() == []


@pytest.mark.parametrize(
    ("bindings", "key", "expected"),
    [
        ([("logs.error", 1)], "logs.error", 1),
        ([("logs.*.error", 1)], "logs.api.error", 1),
        ([("logs.*.error", 1)], "logs.api.db.error", 0),
        ([("logs.#", 1)], "logs.error", 1),
        ([("logs.#", 1)], "logs.api.error", 1),
        ([("logs.#", 1)], "logs.api.db.critical", 1),
        ([("logs.*", 1), ("logs.#", 2)], "logs.error", 2),
        ([("logs.*", 1), ("logs.#", 2)], "logs.error.fatal", 1),
        ([("logs.#", 1), ("logs.*.error", 2), ("logs.*.critical", 3)], "logs.api.info", 1),
        ([("logs.#", 1), ("logs.*.error", 2), ("logs.*.critical", 3)], "logs.api.error", 2),
        ([("logs.#", 1), ("logs.*.error", 2), ("logs.*.critical", 3)], "logs.db.critical", 2),
        ([("logs.*", 1)], "metrics.cpu.usage", 0),
        ([("#.error", 1)], "logs.error", 1),
        ([("#.error", 1)], "logs.api.error", 1),
        ([("#", 1)], "logs", 1),
        ([("#", 1)], "logs.error", 1),
        ([("#", 1)], "anything.at.all", 1),
        ([("a.b", 1)], "aXb", 0),
        ([("a.b", 1)], "a.b", 1),
        ([("my-app.logs.*", 1)], "my-app.logs.error", 1),
        ([("my-app.logs.*", 1)], "myXapp.logs.error", 0),
    ],
)
def test_routing_dry_run(
    routed: MessageQueue, bindings: list[tuple[str, int]], key: str, expected: int
) -> None:
    """topic_tests.sql's test_routing_*_dry_run and regex-injection cases."""
    for pattern, n in bindings:
        routed.bind_topic(pattern, f"topic_queue_{n}")
    assert len(_keys(routed, key)) == expected


QUEUES = ("topic_queue_1", "topic_queue_2", "topic_queue_3")


@pytest.mark.parametrize(
    ("bindings", "keys", "lengths"),
    [
        ([("orders.created", 1)], ["orders.created"], [1, 0, 0]),
        (
            [("logs.*.error", 1)],
            ["logs.app.error", "logs.db.error", "logs.error", "logs.app.system.error"],
            [2, 0, 0],
        ),
        (
            [("events.#", 1)],
            ["events.user", "events.user.login", "events.user.login.success", "events", "notifications.user"],
            [3, 0, 0],
        ),
        (
            [("data.*.processed", 1), ("data.#.processed", 2)],
            ["data.user.processed", "data.order.item.processed"],
            [1, 2, 0],
        ),
        ([("alerts.#", 1), ("alerts.critical.#", 2), ("#", 3)], ["alerts.critical.database"], [1, 1, 1]),
        ([("specific.pattern", 1)], ["different.pattern"], [0, 0, 0]),
        ([("#.error", 1)], ["app.error", "system.database.error", "error", "info"], [2, 0, 0]),
        ([("#", 1)], ["any", "any.pattern", "any.pattern.works"], [3, 0, 0]),
        (
            [("payments.*.completed", 1), ("payments.card.#", 2), ("payments.#", 3)],
            ["payments.card.completed", "payments.paypal.completed", "payments.card.declined"],
            [2, 2, 3],
        ),
    ],
)
def test_send_topic_routes_by_pattern(
    routed: MessageQueue, bindings: list[tuple[str, int]], keys: list[str], lengths: list[int]
) -> None:
    """topic_tests.sql's test_routing_* cases with send_topic."""
    for pattern, n in bindings:
        routed.bind_topic(pattern, f"topic_queue_{n}")
    for key in keys:
        routed.send_topic(key, {"key": key})
    assert _lengths(routed, *QUEUES) == lengths


def test_send_topic_returns_the_queues_matched_and_keeps_headers(routed: MessageQueue) -> None:
    mq = routed
    mq.bind_topic("orders.created", "topic_queue_1")
    assert (
        mq.send_topic("orders.created", {"order_id": 456}, headers={"priority": "high", "source": "web"}) == 1
    )
    got = mq.read("topic_queue_1", vt=10)
    assert got[0].message == {"order_id": 456} and got[0].headers == {"priority": "high", "source": "web"}
    assert mq.send_topic("nobody.listens", {"x": 1}) == 0


def test_send_topic_with_delay(routed: MessageQueue) -> None:
    routed.bind_topic("delayed.message", "topic_queue_1")
    assert routed.send_topic("delayed.message", {"msg": "delayed"}, delay=3600) == 1
    assert routed.read("topic_queue_1", vt=10) == []
    assert _lengths(routed, "topic_queue_1") == [1]


def test_send_topic_refuses_bad_input_before_anything_is_written(routed: MessageQueue) -> None:
    routed.bind_topic("valid.#", "topic_queue_1")
    with pytest.raises(ConfigError, match="bad routing key"):
        routed.send_topic("invalid..key", {"test": True})
    with pytest.raises(ConfigError):
        routed.send_topic("valid.key", {"test": True}, delay=-1)
    with pytest.raises(ConfigError):
        routed.send_batch_topic("valid.key", [])
    with pytest.raises(ConfigError):
        routed.send_batch_topic("valid.key", [{"a": 1}], headers=[{"h": 1}, {"h": 2}])
    assert _lengths(routed, "topic_queue_1") == [0]


def test_send_topic_valid_keys(routed: MessageQueue) -> None:
    """test_validate_routing_key_valid_cases, bound to '#' here so that each is delivered."""
    routed.bind_topic("#", "topic_queue_1")
    for key in ("simple.key", "key-with-hyphens", "key_with_underscores", "single"):
        assert routed.send_topic(key, {"key": key}) == 1


def test_drop_queue_removes_its_bindings(routed: MessageQueue) -> None:
    routed.bind_topic("test.pattern.1", "topic_queue_1")
    routed.bind_topic("test.pattern.2", "topic_queue_1")
    assert len(routed.list_topic_bindings("topic_queue_1")) == 2
    routed.drop_queue("topic_queue_1")
    assert routed.list_topic_bindings("topic_queue_1") == []


def test_send_batch_topic(routed: MessageQueue) -> None:
    """test_send_batch_topic_basic / _with_headers / _no_matches."""
    mq = routed
    mq.bind_topic("batch.test.*", "topic_queue_1")
    mq.bind_topic("batch.#", "topic_queue_2")
    sent = mq.send_batch_topic("batch.test.messages", [{"id": 1}, {"id": 2}, {"id": 3}])
    assert [queue for queue, _ in sent] == ["topic_queue_1"] * 3 + ["topic_queue_2"] * 3
    assert _lengths(mq, "topic_queue_1", "topic_queue_2") == [3, 3]
    mq.purge_queue("topic_queue_1")
    mq.bind_topic("headers.test", "topic_queue_1")
    mq.send_batch_topic("headers.test", [{"msg": 1}, {"msg": 2}], headers=[{"header": "A"}, {"header": "B"}])
    got = mq.read("topic_queue_1", vt=10, qty=10)
    assert [(m.message, m.headers) for m in got] == [
        ({"msg": 1}, {"header": "A"}),
        ({"msg": 2}, {"header": "B"}),
    ]
    assert mq.send_batch_topic("no.matches.here", [{"test": 1}]) == []


def test_one_copy_per_queue_when_several_of_its_patterns_match(routed: MessageQueue) -> None:
    """Regression test for PGMQ's issue #455, for send_topic and send_batch_topic."""
    mq = routed
    mq.bind_topic("logs.*", "topic_queue_1")
    mq.bind_topic("logs.#", "topic_queue_1")
    assert mq.send_topic("logs.error", {"msg": "test"}) == 1
    assert _lengths(mq, "topic_queue_1") == [1]
    mq.bind_topic("batch.test.*", "topic_queue_1")
    mq.bind_topic("batch.test.#", "topic_queue_1")
    assert len(mq.send_batch_topic("batch.test.msg", [{"a": 1}, {"b": 2}])) == 2
    assert _lengths(mq, "topic_queue_1") == [3]


def test_send_topic_in_the_callers_transaction_is_all_or_nothing(routed: MessageQueue, db_url: str) -> None:
    """A rollback of the application's transaction delivers to no queue."""
    from tests.support.db import app_connection

    mq = routed
    mq.bind_topic("orders.#", "topic_queue_1")
    mq.bind_topic("orders.*", "topic_queue_2")
    conn = app_connection(db_url)
    try:
        assert mq.send_topic("orders.created", {"n": 1}, conn=conn) == 2
        conn.rollback()
        assert _lengths(mq, "topic_queue_1", "topic_queue_2") == [0, 0]
        assert mq.send_topic("orders.created", {"n": 2}, conn=conn) == 2
        conn.commit()
    finally:
        conn.close()
    assert _lengths(mq, "topic_queue_1", "topic_queue_2") == [1, 1]
