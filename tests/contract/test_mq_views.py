"""The operator's view of message queues, on every backend: the figures (batchq.mq.overview) and
`batchq mq list/stats/peek/archive/delete/purge/configure`, `batchq stats`, `batchq metrics` and
`batchq configure`, run in-process with click's CliRunner (no process is needed to check what a
command prints and its exit status). Odd rows are written by plain SQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from batchq import MessageQueue, Queue
from batchq.cli import cli
from batchq.mq.overview import message_page, peek, queue_figures
from tests.support.db import sql

ORDER = {
    "$id": "urn:example:order",
    "type": "object",
    "required": ["id"],
    "properties": {"id": {"type": "integer"}},
}


def batchq(db_url: str, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--url", db_url, *args], input=input, catch_exceptions=False)


def figures(mq: MessageQueue, name: str) -> Any:
    [found] = queue_figures(mq.backend, name)
    return found


@pytest.fixture
def m(db_url: str) -> Iterator[MessageQueue]:
    queues = MessageQueue(db_url)
    yield queues
    queues.close()


def fill(m: MessageQueue) -> list[int]:
    """mail: 2 held, 2 visible, 1 delayed, 1 archived; 6 sent."""
    m.create_queue("mail", max_length=100, overflow="reject")
    ids = [m.send("mail", {"n": n}) for n in range(5)]
    ids.append(m.send("mail", {"later": True}, delay=3600))
    m.read("mail", vt=600, qty=2)
    m.archive("mail", ids[2])
    return ids


def test_figures_count_each_state_the_archive_and_sends(m: MessageQueue) -> None:
    ids = fill(m)
    m.create_queue("orders", schema=ORDER)
    m.subscribe("topic", "billing")
    assert m.publish("topic", {"id": 1}) == 1
    mail = figures(m, "mail")
    assert (mail.messages, mail.visible, mail.delayed, mail.held) == (5, 2, 1, 2)
    assert (mail.archived, mail.sent, mail.redelivered) == (1, 6, 0)
    assert mail.oldest_age_seconds is not None and 0 <= mail.oldest_age_seconds < 60
    assert mail.settings() == {"max_length": 100, "overflow": "reject"}
    assert figures(m, "orders").settings() == {"type": "urn:example:order"}
    billing = figures(m, "topic:billing")
    assert billing.subscription is not None and billing.subscription.subscriber == "billing"
    assert billing.messages == 1
    assert [f.queue for f in queue_figures(m.backend)] == ["mail", "orders", "topic:billing"]
    assert queue_figures(m.backend, "nosuch") == []
    # a peek reads nothing: read_ct and vt stay
    before = m.get("mail", ids[0])
    peeked = peek(m.backend, "mail", ids[0])
    assert peeked is not None and peeked.state == "held" and peeked.read_ct == 1
    assert m.get("mail", ids[0]) == before
    states = {p.msg_id: p.state for p in message_page(m.backend, "mail")}
    assert states == {ids[0]: "held", ids[1]: "held", ids[3]: "visible", ids[4]: "visible", ids[5]: "delayed"}
    assert [p.msg_id for p in message_page(m.backend, "mail", after=ids[1], limit=2)] == [ids[3], ids[4]]
    assert m.read("mail", vt=1, qty=5)[0].read_ct == 1  # the visible ones are still unread


def test_mq_commands_show_the_queues(m: MessageQueue, db_url: str) -> None:
    ids = fill(m)
    listed = batchq(db_url, "mq", "list")
    assert listed.exit_code == 0 and "100 reject" in listed.output
    stats = batchq(db_url, "mq", "stats")
    assert stats.exit_code == 0
    [line] = [row for row in stats.output.splitlines() if row.startswith("mail ")]
    assert line.split()[1:5] == ["5", "2", "1", "2"] and "max_length 100, overflow reject" in line
    [data] = json.loads(batchq(db_url, "mq", "stats", "mail", "--json").output)
    assert (data["messages"], data["invisible"], data["archived"], data["sent"]) == (5, 3, 1, 6)
    page = batchq(db_url, "mq", "peek", "mail")
    assert page.exit_code == 0 and '{"later": true}' in page.output and "delayed" in page.output
    one = json.loads(batchq(db_url, "mq", "peek", "mail", str(ids[0]), "--json").output)
    assert one["message"] == {"n": 0} and one["state"] == "held" and one["read_ct"] == 1
    assert m.get("mail", ids[0]).read_ct == 1  # type: ignore[union-attr]


def test_mq_errors_exit_1_for_what_is_not_there_and_2_for_mistakes(m: MessageQueue, db_url: str) -> None:
    fill(m)
    for args in (("stats", "nosuch"), ("peek", "nosuch"), ("purge", "nosuch", "--yes")):
        result = batchq(db_url, "mq", *args)
        assert result.exit_code == 1 and "no message queue 'nosuch'" in result.stderr, args
    assert batchq(db_url, "mq", "peek", "mail", "999999").exit_code == 1
    for args in (("archive", "mail", "999999"), ("delete", "mail", "999999")):
        result = batchq(db_url, "mq", *args)
        assert result.exit_code == 1 and "is not in queue 'mail'" in result.stderr
    assert batchq(db_url, "mq", "peek", "mail", "0").exit_code == 2
    assert batchq(db_url, "mq", "archive", "mail", "x").exit_code == 2
    result = batchq(db_url, "mq", "purge", "mail")  # no terminal, no --yes
    assert result.exit_code == 2 and "--yes" in result.stderr
    assert figures(m, "mail").messages == 5
    assert batchq(db_url, "mq", "configure", "mail", "--overflow", "reject").exit_code == 2
    assert batchq(db_url, "mq", "configure", "mail", "--max-length", "lots").exit_code == 2


def test_archive_delete_and_purge_act_on_what_they_say(
    m: MessageQueue, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = fill(m)
    assert (
        batchq(db_url, "mq", "archive", "mail", str(ids[0])).output
        == f"archived message {ids[0]} of queue mail\n"
    )
    assert batchq(db_url, "mq", "delete", "mail", str(ids[1])).exit_code == 0
    assert m.get("mail", ids[0]) is None and m.get("mail", ids[1]) is None
    assert [a.msg_id for a in m.read_archive("mail")] == [ids[0], ids[2]]
    monkeypatch.setattr("batchq.cli.mq._terminal", lambda: True)
    refused = batchq(db_url, "mq", "purge", "mail", input="n\n")
    assert "Delete the 3 messages of message queue 'mail' (0 held by consumers)?" in refused.output
    assert refused.exit_code == 1 and figures(m, "mail").messages == 3
    done = batchq(db_url, "mq", "purge", "mail", input="y\n")
    assert done.exit_code == 0 and "deleted 3 messages of queue mail" in done.output
    again = batchq(db_url, "mq", "purge", "mail", "--yes")
    assert (again.exit_code, again.output) == (0, "queue mail has no messages: nothing deleted\n")
    assert figures(m, "mail").archived == 2  # the archive stays


def test_configure_shows_and_sets_every_setting(queue: Queue, db_url: str, tmp_path: Path) -> None:
    shown = batchq(db_url, "configure", "mail")
    assert shown.exit_code == 0
    assert shown.output.splitlines()[1:] == [
        "  paused       no",
        "  keep_for     off",
        "  max_length   off",
        "  overflow     -",
        "  type         none (untyped)",
        "  rate         off",
        "  max_running  off",
    ]
    schema = tmp_path / "order.json"
    schema.write_text(json.dumps(ORDER))
    args = ("configure", "mail", "--keep-for", "7d", "--max-length", "50", "--overflow", "reject")
    assert batchq(db_url, *args, "--schema", str(schema)).exit_code == 0
    queue.pause("mail")
    data = json.loads(batchq(db_url, "configure", "mail", "--json").output)
    assert data["paused"] is True and data["keep_for_seconds"] == 604800
    assert (data["max_length"], data["overflow"], data["type"]) == (50, "reject", "urn:example:order")
    assert queue.queue_schema("mail") == ORDER
    stats = json.loads(batchq(db_url, "stats", "--json").output)
    [mail] = [q for q in stats["queues"] if q["queue"] == "mail"]
    assert mail["settings"] == {
        "paused": True,
        "keep_for": "7d00h",
        "max_length": 50,
        "overflow": "reject",
        "type": "urn:example:order",
    }
    assert "keep_for 7d00h, max_length 50" in batchq(db_url, "stats").output
    off = ("configure", "mail", "--keep-for", "off", "--max-length", "off", "--schema", "off", "--json")
    data = json.loads(batchq(db_url, *off).output)
    assert (data["keep_for_seconds"], data["max_length"], data["schema"]) == (None, None, None)
    # mistakes: nothing written
    for bad in (("--max-length", "0"), ("--schema", str(tmp_path / "none.json")), ("--force",)):
        assert batchq(db_url, "configure", "mail", *bad).exit_code == 2, bad
    assert batchq(db_url, "configure", "mail", "--json").output.count('"max_length": null') == 1


def test_mq_configure_sets_the_bound_and_type_through_their_apis(m: MessageQueue, db_url: str) -> None:
    fill(m)
    result = batchq(db_url, "mq", "configure", "mail", "--max-length", "2", "--overflow", "drop_oldest")
    assert result.exit_code == 0 and "3 messages archived to fit the new bound" in result.output
    assert figures(m, "mail").messages == 2
    refused = batchq(db_url, "mq", "configure", "mail", "--schema", "-", input=json.dumps(ORDER))
    assert refused.exit_code == 2 and "does not match the new type" in refused.stderr
    forced = batchq(
        db_url, "mq", "configure", "mail", "--schema", "-", "--force", "--json", input=json.dumps(ORDER)
    )
    data = json.loads(forced.output)
    assert data["type"] == "urn:example:order" and data["notes"] == [
        "2 messages do not match the new type (forced)"
    ]


def test_stats_and_metrics_list_message_queues(m: MessageQueue, db_url: str) -> None:
    fill(m)
    m.subscribe("topic", "billing")
    m.publish("topic", {"id": 1})
    stats = json.loads(batchq(db_url, "stats", "--json").output)
    assert {q["queue"]: q["messages"] for q in stats["message_queues"]} == {"mail": 5, "topic:billing": 1}
    text = batchq(db_url, "metrics").output
    assert 'batchq_mq_messages{queue="mail",state="held"} 2.0' in text
    assert 'batchq_mq_sent_total{queue="mail"} 6.0' in text
    assert 'batchq_mq_archived_messages{queue="mail"} 1.0' in text
    assert 'batchq_mq_max_length{queue="mail"} 100.0' in text
    assert 'batchq_mq_subscription_messages{subscriber="billing",topic="topic"} 1.0' in text


HOSTILE = "night batch\n\x1b[31m"


def test_odd_rows_and_hostile_names_are_shown_never_raised(m: MessageQueue, db_url: str) -> None:
    fill(m)
    placeholder = "?" if m.backend.dialect == "sqlite" else "%s"
    now = {"sqlite": "'2026-01-01 00:00:00'", "mysql": "UTC_TIMESTAMP(6)", "postgresql": "now()"}[
        m.backend.dialect
    ]
    sql(m, f"INSERT INTO batchq_mq_meta (queue, created_at) VALUES ({placeholder}, {now})", (HOSTILE,))
    sql(
        m,
        "INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message) "
        f"VALUES ({placeholder}, {now}, 0, {now}, '{{\"a\": 1}}')",
        (HOSTILE,),
    )
    far = {"sqlite": "'9999-12-31 00:00:00'", "mysql": "'9999-12-31 00:00:00'", "postgresql": "'infinity'"}
    ancient = {
        "sqlite": "'0001-01-01 00:00:00'",
        "mysql": "'1000-01-01 00:00:00'",
        "postgresql": "'-infinity'",
    }
    d = m.backend.dialect
    sql(
        m,
        "INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message) "
        f"VALUES ('mail', {far[d]}, 3, {ancient[d]}, '[1, 2]')",
    )
    if d == "sqlite":  # SQLite stores anything: text that is no JSON, times that are none
        sql(
            m,
            "INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message, headers) "
            "VALUES ('mail', 'soon', 'x', X'FF00', 'not json', 12)",
        )
    assert m.metrics("mail").queue_length == (7 if d == "sqlite" else 6)  # -infinity (PostgreSQL): no age
    for args in (("mq", "list"), ("mq", "stats"), ("mq", "peek", "mail"), ("stats",), ("metrics",)):
        result = batchq(db_url, *args)
        assert result.exit_code == 0, (args, result.output, result.stderr)
        assert "\x1b" not in result.output, args
    assert batchq(db_url, "mq", "stats", "--json").exit_code == 0
    assert batchq(db_url, "mq", "peek", "mail", "--json").exit_code == 0
    assert "night batch\\n\\x1b[31m" in batchq(db_url, "mq", "stats").output
    peeked = batchq(db_url, "mq", "peek", HOSTILE)
    assert peeked.exit_code == 0 and '{"a": 1}' in peeked.output
    [odd_id] = [p.msg_id for p in message_page(m.backend, HOSTILE)]
    archived = batchq(db_url, "mq", "archive", HOSTILE, str(odd_id))  # any name a queue has
    assert archived.exit_code == 0, archived.stderr
    assert (figures(m, HOSTILE).messages, figures(m, HOSTILE).archived) == (0, 1)
    emptied = batchq(db_url, "mq", "purge", HOSTILE, "--yes")
    assert emptied.output == "queue night batch\\n\\x1b[31m has no messages: nothing deleted\n"
    assert batchq(db_url, "mq", "delete", "night batch", "1").exit_code == 1  # no such queue
    states = {p.read_ct: p.state for p in message_page(m.backend, "mail")}
    assert states[3] == "held"  # vt far ahead (PostgreSQL: infinity), read 3 times
    if d == "sqlite":
        assert states["x"] == "visible"  # a vt that is no time: visible, as readers take it


def test_purge_deletes_what_it_counted_not_what_came_while_it_asked(
    m: MessageQueue, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(m)
    asked: list[str] = []

    def answer_after_a_send(question: str, abort: bool = False) -> bool:
        asked.append(question)
        asked.append(str(m.send("mail", {"sent": "while the operator read the question"})))
        return True

    monkeypatch.setattr("batchq.cli.mq._terminal", lambda: True)
    monkeypatch.setattr("click.confirm", answer_after_a_send)
    result = batchq(db_url, "mq", "purge", "mail")
    assert result.exit_code == 0 and "deleted 5 messages of queue mail" in result.output
    assert asked[0] == "Delete the 5 messages of message queue 'mail' (2 held by consumers)?"
    assert [p.msg_id for p in message_page(m.backend, "mail")] == [int(asked[1])]


def test_a_new_bound_alone_keeps_the_queues_overflow_policy(
    m: MessageQueue, queue: Queue, db_url: str
) -> None:
    fill(m)  # mail: 100, reject
    assert batchq(db_url, "mq", "configure", "mail", "--max-length", "50").exit_code == 0
    assert (figures(m, "mail").max_length, figures(m, "mail").overflow) == (50, "reject")
    assert batchq(db_url, "configure", "jobs", "--max-length", "5", "--overflow", "reject").exit_code == 0
    data = json.loads(batchq(db_url, "configure", "jobs", "--max-length", "9", "--json").output)
    assert (data["max_length"], data["overflow"]) == (9, "reject")
    data = json.loads(batchq(db_url, "configure", "fresh", "--max-length", "9", "--json").output)
    assert (data["max_length"], data["overflow"]) == (9, "drop_oldest")  # the default
    assert batchq(db_url, "configure", "jobs", "--max-length", "off").exit_code == 0
    data = json.loads(batchq(db_url, "configure", "jobs", "--max-length", "4", "--json").output)
    assert data["overflow"] == "drop_oldest"  # a lifted bound keeps no policy
