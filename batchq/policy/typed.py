"""Typed queues: a queue's payload type as a JSON Schema, stored with the queue.

A type is given as a JSON Schema (a dict) or as a Python type a schema is derived from (a
dataclass or a TypedDict, with the common field types). It is stored as canonical JSON text
(sorted keys, no spaces), so that every producer, in any process or language, checks against the
same text, and its hash names it: validators are compiled once per process and text
(jsonschema-rs, `_VALIDATORS`), and a message queue's senders compare that hash with the one on
the queue's counter rows as they count a send (batchq.mq), so a changed type is seen by the very
next send at no extra round trip.

jsonschema-rs over the two pure-Python validators: it validates a small payload in about 0.2 us
(fastjsonschema 0.5-2 us, jsonschema 5-55 us, measured with the payloads of bench/typed.py),
knows every draft from 4 to 2020-12 (fastjsonschema stops at 7), reports the failing node's path
with list indexes as ints and the rule in jsonschema's own words ("-1 is less than the minimum
of 1"), and compiles a schema without generating Python source from it (fastjsonschema exec()s
code built from the schema, and here the schema comes from the database). Its cost is a compiled
wheel (abi3, for the usual platforms). Remote `$ref`s are refused: a schema read from the
database must not make every producer fetch URLs.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import json
import re
import time
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from ..errors import ConfigError, PayloadError, PayloadInvalid

if TYPE_CHECKING:
    from ..backends import Row

CHECK_PAGE = 1000  # waiting rows per read when alter_queue checks a queue against a new type

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
UNTYPED = 0  # the schema hash of a queue without a type
CACHE_SECONDS = 1.0  # how stale a job queue's type (or a message reader's) may be in a process
RULE_MAX_CHARS = 300  # a rule quoting a huge value is cut
_MAX_VALIDATORS = 256
_VALIDATORS: dict[int, Any] = {}  # schema hash -> compiled validator, per process
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

SchemaSpec = Mapping[str, Any] | type


# -- a type, as stored ------------------------------------------------------------------------


def schema_text(spec: SchemaSpec | None) -> str | None:
    """The canonical JSON text of a type (None: untyped), checked to compile; ConfigError if not."""
    if spec is None:
        return None
    schema = derive_schema(spec) if isinstance(spec, type) else spec
    if not isinstance(schema, Mapping):
        raise ConfigError(
            f"bad schema {spec!r}: pass a JSON Schema (a dict), a dataclass or a TypedDict, or None"
        )
    try:
        text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"bad schema: it is not JSON ({exc})") from None
    compiled(text)
    return text


def schema_hash(text: str | None) -> int:
    """A type's name in the database: 63 bits of the text's SHA-256, never 0 (0: untyped)."""
    if text is None:
        return UNTYPED
    digest = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1
    return digest or 1


def compiled(text: str) -> Any:
    """The validator of a schema text, compiled once per process (keyed by the text's hash)."""
    key = schema_hash(text)
    validator = _VALIDATORS.get(key)
    if validator is None:
        # Imported here: a process with no typed queue (most `batchq run`s) never loads it.
        import jsonschema_rs

        try:
            validator = jsonschema_rs.validator_for(json.loads(text), retriever=_no_remote_refs)
        except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(f"bad JSON Schema: {first}") from None
        if len(_VALIDATORS) >= _MAX_VALIDATORS:
            _VALIDATORS.clear()
        _VALIDATORS[key] = validator
    return validator


def _no_remote_refs(uri: str) -> Any:
    raise ValueError(f"remote $ref {uri!r} refused: put the definitions in the schema ($defs)")


# -- checking payloads ----------------------------------------------------------------------


@dataclass(frozen=True)
class QueueType:
    """A queue's type as a process knows it: the text, its hash, when it was read."""

    text: str | None
    read_at: float = 0.0  # time.monotonic() of the read

    @functools.cached_property
    def hash(self) -> int:
        return schema_hash(self.text)

    @functools.cached_property
    def _validator(self) -> Any:
        """Its compiled validator, looked up once per QueueType (the lookup hashes the text)."""
        return None if self.text is None else compiled(self.text)

    @property
    def schema(self) -> dict[str, Any] | None:
        return None if self.text is None else dict(json.loads(self.text))

    def problem(self, value: Any) -> tuple[str, str] | None:
        """(path, rule) of the first place a decoded JSON value breaks the type; None if it fits."""
        if self.text is None:
            return None
        validator = self._validator
        if validator.is_valid(value):
            return None
        error = next(iter(validator.iter_errors(value)))
        rule = " ".join(str(error.message).split())
        if len(rule) > RULE_MAX_CHARS:
            rule = rule[: RULE_MAX_CHARS - 3] + "..."
        return json_path(error.instance_path), rule

    def fits_all(self, texts: list[str]) -> bool:
        """Whether every JSON text fits, decoded in one go: a batch's fast path (a False is then
        told message by message, with its path and rule)."""
        if self.text is None:
            return True
        validator = self._validator
        return all(validator.is_valid(value) for value in json.loads("[" + ",".join(texts) + "]"))

    def check(self, data: str | bytes | None, where: str = "") -> None:
        """Raise PayloadInvalid unless stored JSON text (None: the JSON null) fits the type."""
        if self.text is None:
            return
        found = self.problem(None if data is None else json.loads(data))
        if found is not None:
            raise PayloadInvalid(*found, where=where)

    def stored_mismatch(self, payload: Any, serializer: str) -> str | None:
        """Why a stored job payload (as read, with its serializer) does not match this type; None
        if it does, or the queue is untyped."""
        if self.text is None:
            return None
        if serializer != "json":
            return f"payload is {serializer!r}, and the queue is typed (a JSON Schema describes JSON)"
        try:
            return self.reason(None if payload is None else bytes(payload))
        except ConfigError as exc:  # the type's own row, written around batchq: this queue's jobs fail
            return f"the queue's type cannot be used ({exc}): set it again with create_queue or alter_queue"

    def reason(self, data: str | bytes | None) -> str | None:
        """Why a stored payload does not fit (for a row written around batchq); None if it does."""
        if self.text is None:
            return None
        try:
            value = None if data is None else json.loads(data)
        except (UnicodeDecodeError, ValueError):
            return "payload is not valid JSON, and the queue is typed"
        except RecursionError:  # a row written by hand, nested deeper than Python's decoder goes
            return "payload is nested too deeply to read back, and the queue is typed"
        found = self.problem(value)
        return None if found is None else f"payload does not match the queue's type: {found[0]}: {found[1]}"


def json_path(parts: Any) -> str:
    """A node's path as in the errors: $.items[2].qty, $["odd key"]."""
    path = "$"
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _IDENTIFIER.fullmatch(str(part)):
            path += f".{part}"
        else:
            path += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return path


class TypeCache:
    """The types of the queues one process has looked at (queue name -> QueueType)."""

    def __init__(self) -> None:
        self._known: dict[str, QueueType] = {}

    def get(self, queue: str) -> QueueType | None:
        return self._known.get(queue)

    def fresh(self, queue: str, max_age: float = CACHE_SECONDS) -> QueueType | None:
        """The type, if read less than max_age seconds ago."""
        known = self._known.get(queue)
        if known is None or time.monotonic() - known.read_at >= max_age:
            return None
        return known

    def learn(self, queue: str, text: str | bytes | None) -> QueueType:
        if isinstance(text, (bytes, bytearray, memoryview)):  # SQLite: a BLOB written by hand
            text = bytes(text).decode("utf-8", "replace")
        known = self._known[queue] = QueueType(text, time.monotonic())
        return known

    def forget(self, queue: str) -> None:
        self._known.pop(queue, None)


def count_mismatched(
    read_page: Callable[[int, int], list[Row]],
    key: str,
    reason: Callable[[Row], str | None],
    refusal: Callable[[Row, str], str],
    force: bool,
) -> int:
    """How many of a queue's waiting rows do not match a new type (``reason`` says why one does
    not, None when it does), read by ``read_page(after, limit)`` in pages of CHECK_PAGE ordered
    by ``key``; without ``force``, the first raises ConfigError(refusal(row, why))."""
    after, mismatched = 0, 0
    while True:
        page = read_page(after, CHECK_PAGE)
        for row in page:
            why = reason(row)
            if why is not None and not force:
                raise ConfigError(refusal(row, why))
            mismatched += why is not None
        if len(page) < CHECK_PAGE:
            return mismatched
        after = int(page[-1][key])


def refuse_pickle(serializer: str, queue: str) -> None:
    if serializer != "json":
        raise PayloadError(
            f"queue {queue!r} is typed: its payloads are JSON checked against a JSON Schema, so "
            f"serializer={serializer!r} is refused; send JSON, or use an untyped queue"
        )


# -- deriving a schema from a Python type ---------------------------------------------------

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    type(None): {"type": "null"},
}


def derive_schema(tp: type) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a dataclass or TypedDict; ConfigError for what has none."""
    if not (dataclasses.is_dataclass(tp) or is_typeddict(tp)):
        raise ConfigError(
            f"cannot derive a JSON Schema from {tp!r}: pass a dataclass, a TypedDict or a JSON Schema dict"
        )
    return {"$schema": DRAFT_2020_12, **_schema_of(tp, tp.__name__, ())}


def _schema_of(tp: Any, path: str, seen: tuple[Any, ...]) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp in _SCALARS:
        return dict(_SCALARS[tp])
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        return _schema_of(args[0], path, seen)
    if origin is Literal:
        return _literal(args, path)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema_of(arg, path, seen) for arg in args]}
    if origin in (list, set, frozenset) or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return {"type": "array", "items": _schema_of(args[0], f"{path}[]", seen) if args else {}}
    if origin is tuple and args:
        items = [_schema_of(arg, f"{path}[{i}]", seen) for i, arg in enumerate(args)]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if origin is dict or tp is dict:
        if args and args[0] is not str:
            raise ConfigError(
                f"cannot derive a JSON Schema for {path}: {tp!r} (JSON object keys are strings)"
            )
        return {
            "type": "object",
            "additionalProperties": _schema_of(args[1], f"{path}{{}}", seen) if args else {},
        }
    if tp is list:
        return {"type": "array"}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _literal(tuple(member.value for member in tp), path)
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or is_typeddict(tp)):
        if tp in seen:
            raise ConfigError(f"cannot derive a JSON Schema for {path}: {tp.__name__} refers to itself")
        return _object(tp, path, (*seen, tp))
    raise ConfigError(
        f"cannot derive a JSON Schema for {path}: {tp!r} has no JSON form here; use str, int, float, "
        "bool, None, list[...], dict[str, ...], Optional/Union, Literal, an Enum, a dataclass or a "
        "TypedDict, or pass a JSON Schema dict"
    )


def _object(tp: type, path: str, seen: tuple[Any, ...]) -> dict[str, Any]:
    """A dataclass: its fields, those without a default required, nothing else (its constructor
    takes nothing else). A TypedDict: its keys, its required keys required, others allowed (a
    TypedDict is open, as Python's typing has it)."""
    try:
        hints = get_type_hints(tp, include_extras=True)
    except Exception as exc:
        raise ConfigError(
            f"cannot derive a JSON Schema for {path}: its annotations do not resolve ({exc})"
        ) from None
    if is_typeddict(tp):
        names = list(hints)
        required = [name for name in names if _required_key(tp, name, hints[name])]
        hints = {name: _unwrapped(hint) for name, hint in hints.items()}
        closed = False
    else:
        fields = [f for f in dataclasses.fields(tp) if f.init]
        names = [f.name for f in fields]
        required = [
            f.name
            for f in fields
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        closed = True
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {name: _schema_of(hints[name], f"{path}.{name}", seen) for name in names},
        "required": required,
    }
    if closed:
        schema["additionalProperties"] = False
    return schema


_MARKERS = tuple(m for m in (getattr(typing, "Required", None), getattr(typing, "NotRequired", None)) if m)


def _required_key(tp: type, name: str, hint: Any) -> bool:
    """Required[...] / NotRequired[...] win (seen here even under `from __future__ import
    annotations`, where the class's __required_keys__ misses them), else the class's totality."""
    if get_origin(hint) is getattr(typing, "NotRequired", None):
        return False
    if get_origin(hint) is getattr(typing, "Required", None):
        return True
    return name in getattr(tp, "__required_keys__", {name})


def _unwrapped(hint: Any) -> Any:
    return get_args(hint)[0] if _MARKERS and get_origin(hint) in _MARKERS else hint


def _literal(values: tuple[Any, ...], path: str) -> dict[str, Any]:
    for value in values:
        if not (value is None or isinstance(value, (str, int, float, bool))):
            raise ConfigError(f"cannot derive a JSON Schema for {path}: {value!r} is not a JSON value")
    return {"enum": list(values)}


__all__ = ["PayloadInvalid", "QueueType", "TypeCache", "derive_schema", "schema_hash", "schema_text"]
