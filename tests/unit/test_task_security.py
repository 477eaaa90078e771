"""What a task string may name, without a database (issue 9: items 1, 8, 14): the resolver,
the registry of named tasks, and the error text of odd exceptions."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest

from batchq import ConfigError, TaskError, TaskNotAllowed, task
from batchq.jobs.tasks import Resolver, check_task_name
from batchq.runtime.worker import _describe_error
from tests.support.tasks import ALLOWED


def test_resolver_refuses_without_importing() -> None:
    resolver = Resolver([ALLOWED])
    for name in ("hostile_app.side_effect:anything", "hostile_app:side_effect.anything"):
        with pytest.raises(TaskNotAllowed, match="is not allowed"):
            resolver.resolve(name)
    assert "hostile_app.side_effect" not in sys.modules


def test_a_listed_module_that_does_not_exist() -> None:
    with pytest.raises(TaskError, match="cannot import module 'no_such_module_here'"):
        Resolver(["no_such_module_here"]).resolve("no_such_module_here:f")


def test_module_entries_are_names_or_package_stars() -> None:
    resolver = Resolver(["myapp.jobs", "other.*"])
    assert resolver.module_allowed("myapp.jobs")
    assert not resolver.module_allowed("myapp") and not resolver.module_allowed("myapp.jobs.sub")
    assert resolver.module_allowed("other") and resolver.module_allowed("other.a.b")
    assert not resolver.module_allowed("otherx") and not resolver.module_allowed("other._private")
    assert not resolver.module_allowed("other.__main__")
    for bad in ("myapp/jobs", "*", "myapp.*.x", "myapp.jobs:f", "myapp.__main__"):
        with pytest.raises(ConfigError, match="BATCHQ_TASK_MODULES"):
            Resolver([bad])


def test_describe_error_never_raises() -> None:
    from hostile_app.jobs import Unreadable

    text = _describe_error(Unreadable("hidden"))
    assert text.startswith("Unreadable: (its message could not be read")


def first_function(payload: Any = None) -> None:
    return None


def second_function(payload: Any = None) -> None:
    return None


def test_a_registered_name_cannot_be_taken_twice() -> None:
    task(name="security_dup")(first_function)
    task(name="security_dup")(first_function)  # the same function again: fine
    with pytest.raises(TaskError, match="already registered"):
        task(name="security_dup")(second_function)
    assert Resolver([__name__]).resolve("security_dup") is first_function


def test_reloading_a_module_re_registers_its_tasks() -> None:
    import reg_app.tasks

    importlib.reload(reg_app.tasks)  # new function objects, same module and name
    assert Resolver(["reg_app.tasks"]).resolve("reg_touch") is reg_app.tasks.reg_touch


@pytest.mark.parametrize("name", ["jobs:record\n", "send_mail\n", "jobs:record\r\n"])
def test_task_names_with_a_trailing_newline_are_refused(name: str) -> None:
    with pytest.raises(TaskError, match="bad task name"):
        check_task_name(name)


def test_module_entry_with_a_trailing_newline_is_refused() -> None:
    with pytest.raises(ConfigError, match="bad BATCHQ_TASK_MODULES entry"):
        Resolver(["jobs\n"])
