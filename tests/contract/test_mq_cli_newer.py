"""`batchq mq pop / bind / unbind / bindings / route` (PGMQ's newer operations as an operator
uses them), on every backend, run in-process with click's CliRunner."""

from __future__ import annotations

import json

from click.testing import CliRunner, Result

from batchq import MessageQueue
from batchq.cli import cli
from tests.support.messages import Q


def batchq(db_url: str, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--url", db_url, *args], catch_exceptions=False)


def test_mq_pop_prints_one_json_line_per_message_and_deletes_them(mq: MessageQueue, db_url: str) -> None:
    sent = [mq.send(Q, {"n": n}, headers={"h": n}) for n in range(3)]
    result = batchq(db_url, "mq", "pop", Q, "--qty", "2")
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert [(d["msg_id"], d["message"], d["headers"]) for d in lines] == [
        (sent[0], {"n": 0}, {"h": 0}),
        (sent[1], {"n": 1}, {"h": 1}),
    ]
    assert mq.metrics(Q).queue_length == 1
    assert [json.loads(line)["msg_id"] for line in batchq(db_url, "mq", "pop", Q).output.splitlines()] == [
        sent[2]
    ]
    assert batchq(db_url, "mq", "pop", Q).output == ""  # nothing visible: nothing printed


def test_mq_pop_refuses_a_bad_qty_and_a_missing_queue(mq: MessageQueue, db_url: str) -> None:
    mq.send(Q, "x")
    for qty in ("0", "-1", "1001", "many"):
        result = batchq(db_url, "mq", "pop", Q, "--qty", qty)
        assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, qty
    result = batchq(db_url, "mq", "pop", "nosuch")
    assert result.exit_code == 1 and "no message queue 'nosuch'" in result.stderr
    assert mq.metrics(Q).queue_length == 1


def test_mq_bind_route_bindings_unbind(mq: MessageQueue, db_url: str) -> None:
    mq.create_queue("errors")
    assert batchq(db_url, "mq", "bind", "logs.#", Q).output == f"bound logs.# to queue {Q}\n"
    assert batchq(db_url, "mq", "bind", "logs.#", Q).output == f"logs.# was bound to queue {Q} already\n"
    assert batchq(db_url, "mq", "bind", "*.error", "errors").exit_code == 0
    listed = json.loads(batchq(db_url, "mq", "bindings", "--json").output)
    assert [(b["pattern"], b["queue"]) for b in listed] == [("*.error", "errors"), ("logs.#", Q)]
    assert "logs.#" in batchq(db_url, "mq", "bindings", "--queue", Q).output
    routed = json.loads(batchq(db_url, "mq", "route", "logs.error", "--json").output)
    assert sorted(b["queue"] for b in routed) == ["errors", Q]
    assert "goes nowhere" in batchq(db_url, "mq", "route", "metrics.cpu").output
    assert batchq(db_url, "mq", "unbind", "logs.#", Q).output == f"unbound logs.# from queue {Q}\n"
    again = batchq(db_url, "mq", "unbind", "logs.#", Q)
    assert again.exit_code == 1 and "is not bound" in again.stderr
    assert [b.pattern for b in mq.list_topic_bindings()] == ["*.error"]
    assert mq.send_topic("app.error", {"x": 1}) == 1 and mq.metrics("errors").queue_length == 1


def test_mq_bind_and_route_refuse_bad_input_in_one_line(mq: MessageQueue, db_url: str) -> None:
    for args in (
        ("bind", "logs.**", Q),
        ("bind", "logs..x", Q),
        ("bind", "logs.(a|b)", Q),
        ("route", "logs.*"),
    ):
        result = batchq(db_url, "mq", *args)
        assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1, args
        assert result.stderr.startswith("batchq: error: bad "), result.stderr
    missing = batchq(db_url, "mq", "bind", "logs.#", "nosuch")
    assert missing.exit_code == 1 and "no message queue 'nosuch'" in missing.stderr
    assert mq.list_topic_bindings() == []
