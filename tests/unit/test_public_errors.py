"""Every error type a caller of the API can catch is importable from ``batchq`` itself (issue 23,
item 4: ``batchq.PayloadInvalid`` was not)."""

from __future__ import annotations

import inspect

import batchq
from batchq import errors


def test_every_error_of_batchq_errors_is_exported_at_the_top_level() -> None:
    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, errors.BatchqError)
    }
    assert "PayloadInvalid" in defined
    missing = sorted(name for name in defined if getattr(batchq, name, None) is not getattr(errors, name))
    assert missing == []
    assert defined <= set(batchq.__all__)


def test_payload_invalid_is_the_one_typed_queues_raise() -> None:
    from batchq.policy.typed import PayloadInvalid

    assert batchq.PayloadInvalid is PayloadInvalid
    assert issubclass(batchq.PayloadInvalid, batchq.ConfigError)
    assert issubclass(batchq.PayloadInvalid, batchq.PayloadError)
