"""The dashboard's message-queue pages over HTTP, on every backend: what they show, that looking
reads nothing, and that archive, delete and purge need what every action needs (a signed-in
session, its CSRF token, a POST from this site; nothing in read-only mode), act on exactly the
scope their confirmation states, and answer bad links with 400 and missing things with 404."""

from __future__ import annotations

import html
import re

from batchq import MessageQueue, Queue
from tests.support.dashboard import dashboard
from tests.support.db import sql


def seeded(db_url: str) -> tuple[MessageQueue, list[int]]:
    m = MessageQueue(db_url)
    m.create_queue("mail", max_length=100, overflow="reject")
    ids = [m.send("mail", {"to": f"user{n}", "note": "<b>hi</b>"}, headers={"trace": "t"}) for n in range(4)]
    m.read("mail", vt=600)  # ids[0] held
    m.subscribe("orders", "billing")
    m.publish("orders", {"id": 1})
    return m, ids


def test_pages_show_the_queues_and_their_messages_without_reading_them(db_url: str) -> None:
    m, ids = seeded(db_url)
    with dashboard(db_url) as board:
        page = board.get("/mq").body
        assert re.search(
            r'data-queue="mail">.*?<td class="n">4</td><td class="n">3</td><td class="n">0</td>\s*'
            r'<td class="n">1</td>',
            page,
            re.S,
        )
        assert "max_length 100, overflow reject" in page and "subscriber billing of topic orders" in page
        assert 'href="/mq"' in board.get("/").body  # in the navigation
        queue = board.get("/mq/queue?queue=mail").body
        assert f'data-msg="{ids[0]}"' in queue and "held" in queue
        assert "&lt;b&gt;hi&lt;/b&gt;" in queue and "<b>hi</b>" not in queue
        one = board.get(f"/mq/message?queue=mail&id={ids[1]}")
        assert one.status == 200 and "&#34;to&#34;: &#34;user1&#34;" in one.body
        assert "&#34;trace&#34;: &#34;t&#34;" in one.body
        assert [msg.msg_id for msg in m.read("mail", vt=1, qty=3)] == ids[1:]  # the views read nothing
        assert m.get("mail", ids[1]).read_ct == 1  # type: ignore[union-attr]  # that read, only
        assert board.get(f"/mq/message?queue=mail&id={ids[-1] + 100}").status == 404
        assert board.get("/mq/queue?queue=nosuch").status == 404
        for bad in (
            "/mq/queue",
            "/mq/queue?queue=mail&after=x",
            "/mq/message?queue=mail&id=0",
            "/mq/message?queue=mail&id=99999999999999999999",
            "/mq/queue?queue=ma%00il",
        ):
            reply = board.get(bad)
            assert reply.status == 400, (bad, reply.status)
    m.close()


def test_paging_through_a_queue(db_url: str) -> None:
    m = MessageQueue(db_url)
    m.create_queue("bulk")
    ids = m.send_batch("bulk", [{"n": n} for n in range(120)])
    with dashboard(db_url) as board:
        first = board.get("/mq/queue?queue=bulk").body
        assert f'data-msg="{ids[49]}"' in first and f'data-msg="{ids[50]}"' not in first
        next_url = html.unescape(re.search(r'href="([^"]+)" id="next"', first).group(1))  # type: ignore[union-attr]
        second = board.get(next_url).body
        assert f'data-msg="{ids[50]}"' in second and f'data-msg="{ids[49]}"' not in second
    m.close()


def test_actions_need_a_session_and_csrf_and_act_on_their_scope(db_url: str) -> None:
    m, ids = seeded(db_url)
    with dashboard(db_url) as board:
        form = {"queue": "mail", "id": str(ids[1])}
        assert board.post("/actions/mq-archive", form).status == 403  # not signed in
        csrf = board.sign_in()
        assert board.post("/actions/mq-archive", form).status == 403  # no CSRF token
        evil = board.post("/actions/mq-delete", {**form, "csrf": csrf}, Origin="http://evil.example")
        assert evil.status == 403 and m.get("mail", ids[1]) is not None
        assert board.get(f"/actions/mq-delete?queue=mail&id={ids[1]}").status == 405  # POST only
        page = board.get(f"/mq/message?queue=mail&id={ids[0]}").body
        assert f"Archive message {ids[0]} of message queue mail, which a consumer holds?" in html.unescape(
            page
        )
        done = board.post("/actions/mq-archive", {**form, "csrf": csrf})
        assert done.status == 303 and "archived+message" in done.headers["Location"]
        assert [a.msg_id for a in m.read_archive("mail")] == [ids[1]]
        assert (
            board.post("/actions/mq-delete", {"queue": "mail", "id": str(ids[2]), "csrf": csrf}).status == 303
        )
        assert m.get("mail", ids[2]) is None and len(m.read_archive("mail")) == 1
        again = board.post("/actions/mq-delete", {"queue": "mail", "id": str(ids[2]), "csrf": csrf})
        assert "no+longer+there" in again.headers["Location"]
        assert board.post("/actions/mq-delete", {"queue": "mail", "id": "x", "csrf": csrf}).status == 400
        # purge: the confirmation states the count and the newest id; a message sent after the
        # page was drawn is not deleted
        listing = html.unescape(board.get("/mq").body)
        assert (
            f"Delete the 2 messages of message queue mail (ids up to {ids[3]}, 1 held by consumers)?"
            in listing
        )
        later = m.send("mail", {"to": "late"})
        purged = board.post("/actions/mq-purge", {"queue": "mail", "up_to": str(ids[3]), "csrf": csrf})
        assert purged.status == 303 and "deleted+2+messages" in purged.headers["Location"]
        assert [msg.msg_id for msg in m.read("mail", vt=1, qty=10)] == [later]
        assert board.post("/actions/mq-purge", {"queue": "mail", "csrf": csrf}).status == 400
        assert board.post("/actions/mq-purge", {"queue": "nosuch", "up_to": "1", "csrf": csrf}).status == 404
    with dashboard(db_url, "--read-only") as board:
        assert 'id="purge-mail"' not in board.get("/mq").body
        assert board.post("/actions/mq-purge", {"queue": "mail", "up_to": str(later)}).status == 403
    assert m.get("mail", later) is not None
    m.close()


HOSTILE = "<img src=x onerror=alert(1)>\"'&"


def test_hostile_names_and_odd_rows_are_escaped_and_never_fail_a_page(db_url: str) -> None:
    m, _ = seeded(db_url)
    dialect = m.backend.dialect
    mark = "?" if dialect == "sqlite" else "%s"
    now = {"sqlite": "'2026-01-01 00:00:00'", "mysql": "UTC_TIMESTAMP(6)", "postgresql": "now()"}[dialect]
    sql(m, f"INSERT INTO batchq_mq_meta (queue, created_at) VALUES ({mark}, {now})", (HOSTILE,))
    sql(
        m,
        "INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message) "
        f"VALUES ({mark}, {now}, 0, {now}, {mark})",
        (HOSTILE, '{"x": "</pre><script>alert(2)</script>"}'),
    )
    if dialect == "sqlite":
        sql(
            m,
            "INSERT INTO batchq_message (queue, vt, read_ct, enqueued_at, message) "
            "VALUES ('mail', 'soon', 'x', X'FF00', X'FFFE')",
        )
    with dashboard(db_url) as board:
        board.sign_in()
        listing = board.get("/mq")
        assert listing.status == 200 and "<img src=x" not in listing.body
        assert "&lt;img src=x onerror=alert(1)&gt;&#34;&#39;&amp;" in listing.body
        link = re.search(r'href="(/mq/queue\?queue=%3Cimg[^"]*)"', listing.body)
        assert link is not None
        queue = board.get(html.unescape(link.group(1)))
        assert queue.status == 200 and "<script>alert(2)" not in queue.body
        assert "&lt;/pre&gt;&lt;script&gt;" in queue.body
        assert board.get("/mq/queue?queue=mail").status == 200
    m.close()


def test_the_queues_page_shows_each_job_queues_settings(db_url: str) -> None:
    queue = Queue(db_url)
    queue.configure("mail", keep_for="7d", max_length=5, overflow="reject")
    queue.alter_queue("mail", schema={"title": "Mail <b>", "type": "object"})
    queue.pause("idle")
    try:
        with dashboard(db_url) as board:
            page = board.get("/").body
            row = re.search(r'data-queue="mail">.*?</tr>', page, re.S)
            assert row is not None
            assert "keep_for 7d00h, max_length 5, overflow reject, type Mail &lt;b&gt;" in row.group(0)
            idle = re.search(r'data-queue="idle">.*?</tr>', page, re.S)
            assert idle is not None and '<td class="settings"><span class="muted">-</span>' in idle.group(0)
    finally:
        queue.close()
