"""The dashboard's charts page (issue 28) over HTTP, on every backend: empty, one point, gaps,
many queues and hostile queue names; the range selector and its refusals; SVG drawn on the
server, titled for screen readers, loading nothing; and `batchq tick` writing the samples."""

from __future__ import annotations

import re

from batchq import Queue
from batchq.ops.charts import RETAIN_MINUTES, sample
from tests.contract.test_charts import minute_now, write
from tests.support.cli import invoke_batchq
from tests.support.dashboard import dashboard
from tests.support.db import sql

CHARTS = ("finished", "failed", "depth", "oldest")


def svg(page: str, key: str) -> str:
    found = re.search(rf'<svg id="chart-{key}".*?</svg>', page, re.S)
    assert found, key
    return found.group(0)


def test_with_nothing_sampled_the_page_says_how_to_sample(queue: Queue, db_url: str) -> None:
    with dashboard(db_url) as board:
        reply = board.get("/charts")
    assert reply.status == 200 and 'id="no-samples"' in reply.body and "batchq tick" in reply.body
    for key in CHARTS:
        drawn = svg(reply.body, key)
        assert 'role="img"' in drawn and f'aria-labelledby="svg-title-{key} svg-desc-{key}"' in drawn
        assert "no samples in this range" in drawn and "<polyline" not in drawn
    assert '<a href="/charts">Charts</a>' in reply.body


def test_one_point_is_a_dot_and_a_gap_breaks_the_line(queue: Queue, db_url: str) -> None:
    now = minute_now(queue)
    write(queue, "runs", now - 30, 5, 1, 3, 12.0)  # one point alone
    for minute in (now - 10, now - 9, now - 5, now - 4):  # two runs with a gap between
        write(queue, "runs", minute, 2, 0, 1, 1.0)
    with dashboard(db_url) as board:
        page = board.get("/charts").body
    finished = svg(page, "finished")
    [line] = re.findall(r'<g class="series" data-series="runs".*?</g>', finished, re.S)
    assert line.count("<polyline") == 2 and line.count("<circle") == 1
    assert "runs: at most 5" in finished  # the desc names each line's peak
    assert re.search(r'data-series="runs">.*?<td class="n">13</td><td class="n">1</td>', page, re.S)


def test_hostile_names_are_text_and_many_queues_fold_into_other(queue: Queue, db_url: str) -> None:
    now = minute_now(queue)
    hostile = '<script>alert("x")</script>'
    wide = "ü" * (64 if queue.backend.dialect == "mysql" else 200)
    write(queue, hostile, now - 1, 50, 5, 9, 60.0)
    write(queue, wide, now - 1, 40, 0, 2, 5.0)
    for n in range(8):
        write(queue, f"quiet{n}", now - 1, n, 0, 0, 0.0)
    write(queue, "gone", now - 1, -4, None, -2, None)  # by hand: negative, NULL
    write(queue, "later", now + 90, 9, 9, 9, 9.0)  # a future minute: not drawn
    with dashboard(db_url) as board:
        page = board.get("/charts").body
        assert board.get("/charts?range=24h").status == 200
        assert board.get("/charts?range=7d").status == 200
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    assert wide in page and "later" not in page
    assert page.count('<g class="series"') == 4 * 7  # six queues and "other", per chart
    assert "other (5 queues)" in page and "The 6 busiest queues get a line each" in page
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing loaded from elsewhere


def test_a_range_is_one_of_three(queue: Queue, db_url: str) -> None:
    with dashboard(db_url) as board:
        for bad in ("2h", "1H", "../", "7d;drop"):
            reply = board.get(f"/charts?range={bad}")
            assert (
                reply.status == 400 and "bad range" in reply.body and "use one of 1h, 24h, 7d" in reply.body
            )
        chosen = board.get("/charts?range=7d").body
    assert 'id="range-7d" aria-current="page"' in chosen and 'href="/charts?range=1h"' in chosen
    assert "averaged over 60 minutes" in chosen


def test_tick_samples_the_minute_once_and_prunes(queue: Queue, db_url: str) -> None:
    queue.enqueue_many("jobs:noop", [1, 2, 3], queue="backlog")
    now = minute_now(queue)
    write(queue, "ancient", now - RETAIN_MINUTES - 5, 1, 1, 1, 1.0)
    result = invoke_batchq(db_url, "tick")
    assert result.returncode == 0 and result.stdout == result.stderr == "", result
    depth = sql(queue, "SELECT depth FROM batchq_chart_minute WHERE queue = 'backlog' AND depth IS NOT NULL")
    assert depth == [(3,)]
    assert not sql(queue, "SELECT 1 FROM batchq_chart_minute WHERE queue = 'ancient'")
    again = invoke_batchq(db_url, "tick")
    assert again.returncode == 0 and again.stdout == again.stderr == "", again
    assert sample(queue.backend).skipped or minute_now(queue) > now  # the minute may have turned
    with dashboard(db_url) as board:
        page = board.get("/charts").body
    assert re.search(r'data-series="backlog">.*?<td class="n">3</td>', page, re.S)
