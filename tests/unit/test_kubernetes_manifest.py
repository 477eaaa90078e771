"""deploy/kubernetes/batchq-cronjobs.yaml (docs/how-to/kubernetes.md includes it) is valid YAML
of the Kubernetes objects it claims to be: field names as the API spells them (a typo such as
`concurrencypolicy` would be dropped by the server without a word), schedules cron accepts,
every container's batchq command and options as the CLI parses them, the URL from the Secret
the file defines. No cluster here: the API's field names are listed below."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from croniter import croniter

from tests.support.processes import ROOT
from tests.unit.test_cron_and_systemd_examples import check_batchq_args

MANIFEST = ROOT / "deploy" / "kubernetes" / "batchq-cronjobs.yaml"
PAGE = ROOT / "docs" / "how-to" / "kubernetes.md"

# The fields of batch/v1 CronJobSpec, JobSpec, core/v1 PodSpec (those a job runner uses) and
# Container, as the Kubernetes API reference (v1.32) names them.
CRONJOB_SPEC = {
    "schedule", "timeZone", "startingDeadlineSeconds", "concurrencyPolicy", "suspend", "jobTemplate",
    "successfulJobsHistoryLimit", "failedJobsHistoryLimit",
}  # fmt: skip
JOB_SPEC = {
    "parallelism", "completions", "activeDeadlineSeconds", "podFailurePolicy", "successPolicy",
    "backoffLimit", "backoffLimitPerIndex", "maxFailedIndexes", "selector", "manualSelector",
    "template", "ttlSecondsAfterFinished", "completionMode", "suspend", "podReplacementPolicy",
    "managedBy",
}  # fmt: skip
POD_SPEC = {
    "containers", "initContainers", "restartPolicy", "terminationGracePeriodSeconds",
    "activeDeadlineSeconds", "serviceAccountName", "nodeSelector", "affinity", "tolerations",
    "securityContext", "imagePullSecrets", "volumes", "priorityClassName",
}  # fmt: skip
CONTAINER = {
    "name", "image", "command", "args", "env", "envFrom", "resources", "imagePullPolicy",
    "workingDir", "volumeMounts", "securityContext",
}  # fmt: skip


def objects(path: Path = MANIFEST) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text("utf-8")) if doc]


def cronjobs() -> list[dict[str, Any]]:
    return [o for o in objects() if o["kind"] == "CronJob"]


def test_the_manifest_is_a_secret_and_cronjobs() -> None:
    kinds = [(o["apiVersion"], o["kind"]) for o in objects()]
    assert kinds[0] == ("v1", "Secret") and kinds[1:] == [("batch/v1", "CronJob")] * (len(kinds) - 1)
    names = [o["metadata"]["name"] for o in objects()]
    assert len(names) == len(set(names)) and len(names) >= 4


@pytest.mark.parametrize("cronjob", cronjobs(), ids=lambda o: o["metadata"]["name"])
def test_each_cronjob_has_only_fields_the_api_knows(cronjob: dict[str, Any]) -> None:
    spec = cronjob["spec"]
    job = spec["jobTemplate"]["spec"]
    pod = job["template"]["spec"]
    assert set(spec) <= CRONJOB_SPEC and set(job) <= JOB_SPEC and set(pod) <= POD_SPEC
    assert croniter.is_valid(spec["schedule"]), spec["schedule"]
    assert spec.get("concurrencyPolicy", "Allow") in {"Allow", "Forbid", "Replace"}
    assert pod["restartPolicy"] in {"Never", "OnFailure"}  # a Job's pods may not use Always
    for container in pod["containers"]:
        assert set(container) <= CONTAINER, set(container) - CONTAINER


@pytest.mark.parametrize("cronjob", cronjobs(), ids=lambda o: o["metadata"]["name"])
def test_each_command_is_a_batchq_command_the_cli_parses(cronjob: dict[str, Any]) -> None:
    [container] = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    command = container["command"]
    assert command[0] == "batchq" and all(isinstance(word, str) for word in command)
    check_batchq_args(command[1:])  # raises as the CLI would on an unknown command or option
    secret = objects()[0]
    [url] = [e for e in container["env"] if e["name"] == "BATCHQ_URL"]
    ref = url["valueFrom"]["secretKeyRef"]
    assert ref["name"] == secret["metadata"]["name"] and ref["key"] in secret["stringData"]


def test_the_worker_and_both_sweeps_are_scheduled() -> None:
    commands = {
        " ".join(c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"][:2])
        for c in cronjobs()
    }
    assert {"batchq run", "batchq gc-processing", "batchq gc-error"} <= commands


def test_the_page_shows_this_file() -> None:
    assert '--8<-- "deploy/kubernetes/batchq-cronjobs.yaml"' in PAGE.read_text("utf-8")
