"""serializers.json_depth, the depth half of batchq's JSON rule (issue 23, item 3), against a
walk of the decoded value: strings that hold brackets, quotes and backslashes count nothing."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from batchq.core.serializers import _JSON, MAX_JSON_DEPTH, json_depth

TRICKY = ["[", "]", "{", "}", '"', "\\", '\\"', '"[', "\\\\", "é[", "\n", "]]]]", '\\"{{', "\\u0000"]


def walked(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((walked(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((walked(v) for v in value), default=0)
    return 0


def build(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.2:
        return rng.choice([*TRICKY, 1, None, True, "".join(rng.choices(TRICKY, k=3))])
    if rng.random() < 0.5:
        return [build(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(TRICKY) + str(n): build(rng, depth - 1) for n in range(rng.randint(0, 3))}


@pytest.mark.parametrize("seed", range(60))
def test_depth_matches_a_walk_of_the_value(seed: int) -> None:
    value = build(random.Random(seed), 40)
    text = _JSON.encode(value)
    assert json.loads(text) == value
    assert json_depth(text, most=100) == walked(value)


def test_depth_is_counted_up_to_its_limit_only() -> None:
    text = "[" * 500 + "]" * 500
    assert json_depth(text) == MAX_JSON_DEPTH + 1
