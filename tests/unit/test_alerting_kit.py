"""The alerting kit (deploy/, docs/alerting.md): the Prometheus rules pass `promtool check rules`
and their unit tests (`promtool test rules`), and every metric the rules and the Grafana
dashboard query is one `batchq metrics` emits (or node_exporter's, named here)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from batchq import Queue
from batchq.ops.metrics import render

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "batchq-alerts.yml"
RULE_TESTS = ROOT / "deploy" / "prometheus" / "batchq-alerts.test.yml"
GRAFANA = ROOT / "deploy" / "grafana" / "batchq-dashboard.json"
NOT_BATCHQ = {"node_textfile_mtime_seconds"}  # node_exporter's, beside the textfile batchq writes
PROMQL_WORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "inf", "nan"}


def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool is missing: scripts/ensure-promtool installs it (Debian's package prometheus)"
    return found


def emitted(tmp_path: Path) -> set[str]:
    """The metric names `batchq metrics` writes (families are declared even with no sample)."""
    queue = Queue(f"sqlite:///{tmp_path / 'metrics.db'}")
    try:
        queue.init_db()
        text = render(queue.backend).decode()
    finally:
        queue.close()
    names = set(re.findall(r"^# TYPE (\w+) ", text, re.MULTILINE))
    return names | {f"{name}_total" for name in names} | NOT_BATCHQ


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: what is left once label matchers, strings,
    ranges, grouping clauses, function calls, keywords and numbers are taken out."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"(?<![A-Za-z0-9_:])[0-9][0-9.e+]*(?:ms|[smhdwy])*", "", expr)  # numbers, durations
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        word, rest = match.group(0), expr[match.end() :].lstrip()
        if rest.startswith("(") or word.lower() in PROMQL_WORDS:
            continue  # a function call, or a keyword
        names.add(word)
    return names


def rule_exprs() -> list[str]:
    text = RULES.read_text()
    exprs = re.findall(r"^\s*expr:\s*(.+)$", text, re.MULTILINE)
    assert len(exprs) == len(re.findall(r"^\s*- alert:", text, re.MULTILINE)), (
        "one single-line expr per alert"
    )
    return exprs


def grafana_exprs() -> list[str]:
    board: dict[str, Any] = json.loads(GRAFANA.read_text())
    exprs = [target["expr"] for panel in board["panels"] for target in panel["targets"]]
    for variable in board["templating"]["list"]:
        query = re.fullmatch(r"label_values\((\w+),\s*\w+\)", variable["definition"])
        assert query, variable["definition"]
        exprs.append(query.group(1))
    return exprs


def test_the_rules_pass_promtool_check_and_their_unit_tests() -> None:
    checked = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True)
    assert checked.returncode == 0 and "SUCCESS: 9 rules found" in checked.stdout, checked
    tested = subprocess.run(
        [promtool(), "test", "rules", RULE_TESTS.name], capture_output=True, text=True, cwd=RULE_TESTS.parent
    )
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


@pytest.mark.parametrize("source", ["rules", "grafana"])
def test_every_metric_queried_is_one_batchq_metrics_emits(source: str, tmp_path: Path) -> None:
    known = emitted(tmp_path)
    exprs = rule_exprs() if source == "rules" else grafana_exprs()
    assert exprs
    for expr in exprs:
        names = metric_names(expr)
        assert names, expr  # every query reads some metric
        assert names <= known, (expr, names - known)


def test_the_check_fails_on_a_metric_batchq_does_not_emit(tmp_path: Path) -> None:
    known = emitted(tmp_path)
    assert {"batchq_jobs", "batchq_workers", "batchq_mq_messages", "batchq_mq_sent_total"} <= known
    assert metric_names('sum by (queue) (rate(batchq_jobz{state="ready"}[5m])) > 0') == {"batchq_jobz"}
    assert not metric_names('batchq_jobs{state="failed"} offset 15m') - known
    assert metric_names("time() - batchq_schedule_next_run_timestamp_seconds > 300") == {
        "batchq_schedule_next_run_timestamp_seconds"
    }
    assert "batchq_jobz" not in known


def test_the_grafana_dashboard_is_importable_json() -> None:
    board = json.loads(GRAFANA.read_text())
    assert board["uid"] == "batchq" and board["__inputs"][0]["name"] == "DS_PROMETHEUS"
    assert len({panel["id"] for panel in board["panels"]}) == len(board["panels"])
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}" and panel["targets"], panel["title"]
