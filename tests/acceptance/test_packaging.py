"""What a user installs (issue 26): `python -m build` makes the sdist and, from it, the wheel; the
wheel goes into a fresh virtualenv outside the checkout (its dependencies from the package index,
as a user's pip gets them), and the README's quickstart runs from there: in an empty folder, with
no file of the checkout on the path (no PYTHONPATH but the quickstart's own `.`, no checkout as
the working directory), on that virtualenv's `batchq` and `python`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from tests.acceptance.test_quickstart import quickstart
from tests.support.processes import ROOT

pytestmark = pytest.mark.slow  # a build, a virtualenv and an install: tens of seconds


def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["version"])


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


def checkout_copy(target: Path) -> Path:
    """The checkout's committed-or-staged files (git ls-files), so the build writes nothing into it."""
    listed = run(["git", "ls-files"], ROOT).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without PYTHON*/BATCHQ_*/VIRTUAL_ENV and without this virtualenv on PATH."""
    ours = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BATCHQ_", "PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != ours)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = checkout_copy(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(source)], source)
    return out


def test_the_sdist_and_the_wheel_hold_what_an_install_needs(dist: Path) -> None:
    [sdist] = dist.glob("batchq-*.tar.gz")
    [wheel] = dist.glob("batchq-*.whl")
    assert sdist.name == f"batchq-{version()}.tar.gz" and wheel.name.startswith(f"batchq-{version()}-")
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    assert {"batchq/__init__.py", "batchq/sql/sqlite/jobs.sql", "batchq/cli/__init__.py"} <= names
    assert any(n.startswith("batchq/sql/mysql/migrations/") and n.endswith(".sql") for n in names)
    assert any(n.startswith("batchq/dashboard/templates/") for n in names)
    assert not any(n.startswith(("tests/", "docs/", "bench/")) for n in names)
    with tarfile.open(sdist) as t:
        members = {m.name.split("/", 1)[1] for m in t.getmembers() if "/" in m.name}
    assert {"README.md", "pyproject.toml", "sql/postgresql/jobs.sql"} <= members


def test_the_wheel_in_a_fresh_virtualenv_runs_the_quickstart(dist: Path, tmp_path: Path) -> None:
    [wheel] = dist.glob("batchq-*.whl")
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path, clean_env())
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp_path, clean_env())
    env = clean_env(PATH=os.pathsep.join([str(venv / "bin"), clean_env()["PATH"]]), HOME=str(tmp_path))

    folder = tmp_path / "app"
    folder.mkdir()
    blocks = quickstart()
    for _, code in blocks[:2]:
        (folder / code.split("\n", 1)[0].removeprefix("# ").split(":", 1)[0]).write_text(code, "utf-8")
    where = run(["python", "-c", "import batchq, sys; print(batchq.__file__); print(sys.path)"], folder, env)
    assert where.stdout.startswith(str(venv)) and str(ROOT) not in where.stdout, where.stdout

    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", blocks[2][1]],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "mail to ann@example.com\n"
    assert "batchq: processed 1 job (1 ok, 0 errors)" in done.stderr, done.stderr
    assert str(ROOT) not in done.stderr
