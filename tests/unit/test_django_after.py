"""batchq.contrib.django.after: the block that gives Django Tasks batchq's after= (the backend
reads it at each enqueue; tests/acceptance/test_django_tasks.py runs it end to end)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from batchq import ConfigError
from batchq.contrib.django import after
from batchq.contrib.django.after import current_parents


def test_a_block_gives_its_parents_and_nested_blocks_add_up() -> None:
    assert current_parents() is None
    with after(SimpleNamespace(id="12"), 7):  # a TaskResult's id is a string of digits
        assert current_parents() == [12, 7]
        with after(3):
            assert current_parents() == [12, 7, 3]
        assert current_parents() == [12, 7]
    assert current_parents() is None


@pytest.mark.parametrize("parent", ["abc", SimpleNamespace(id="5f2c-uuid"), True, 1.5, None])
def test_what_is_not_a_batchq_job_id_is_refused_at_the_block(parent: object) -> None:
    with pytest.raises(ConfigError, match="is not a batchq job"), after(parent):
        pass


def test_an_empty_block_is_refused() -> None:
    with pytest.raises(ConfigError, match="at least one parent"), after():
        pass
