"""Payload encoding: JSON by default; pickle only when opted in, and HMAC-signed.

A pickled payload is stored as 32 bytes of HMAC-SHA256 over the pickle,
then the pickle. It is verified before ``pickle.loads`` ever sees it, so a
row written by someone without the secret can never execute code.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import re
from typing import Any

from ..errors import ConfigError, PayloadError, SignatureError

SECRET_ENV = "BATCHQ_SECRET"
_SIGNATURE_BYTES = 32
# One encoder for every payload: json.dumps with options builds a new one per call, a fifth of
# enqueue_many's Python time.
_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_JSON_DECODER = json.JSONDecoder()  # json.loads's own, without its per-call checks (_json_loads)
# What JSON batchq writes, one rule on every backend, checked before any statement: nesting of
# at most 31 arrays and objects (MariaDB refuses 32 or more, error 4025; the others take ~900)
# and no NUL character (PostgreSQL's jsonb refuses \u0000, 22P05, and aborts the transaction).
MAX_JSON_DEPTH = 31
_NUL = "\\u0000"  # as the encoder writes U+0000
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")  # not a backslash followed by "u0000"
# Outside its strings the encoder's JSON is ASCII: keep its brackets, as one kind (matched
# pairs nest alike); delete every other character.
_ONE_KIND = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")


def secret_from_env() -> bytes | None:
    value = os.environ.get(SECRET_ENV)
    return value.encode() if value else None


def dumps(payload: Any, serializer: str, secret: bytes | None) -> bytes | None:
    """Encode a payload; raise PayloadError before anything is written."""
    if payload is None:
        return None
    if serializer == "json":
        try:
            text = _JSON.encode(payload)
            check_json_text(text)
            return text.encode("utf-8")
        except PayloadError:
            raise
        except (TypeError, ValueError) as exc:
            raise PayloadError(
                f"payload cannot be stored as JSON ({exc}); pass JSON types (dict, list, str, "
                "int, float, bool, None), or opt in to serializer='pickle' with a secret"
            ) from None
        except UnicodeEncodeError as exc:
            raise PayloadError(f"payload has text that is not valid UTF-8 ({exc.reason})") from None
        except RecursionError:
            raise _too_deep("hundreds of") from None
    if serializer == "pickle":
        key = _require_secret(secret)
        try:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise PayloadError(f"payload cannot be pickled: {exc}") from None
        return hmac.new(key, data, hashlib.sha256).digest() + data
    raise ConfigError(f"unknown serializer {serializer!r}: use 'json' or 'pickle'")


def which_of(noun: str, index: int, count: int) -> str:
    """How an error names one payload of a batch, counting from 1 ("job 2 of 3"); alone, the noun."""
    return noun if count == 1 else f"{noun} {index + 1} of {count}"


def numbered(error: PayloadError, noun: str, index: int, count: int) -> PayloadError:
    """A batch's payload error, saying which payload ("job 2 of 3: payload ..."), of the same type."""
    if count == 1:
        return error
    error.args = (f"{which_of(noun, index, count)}: {error}",)
    return error


def check_json_text(text: str) -> None:
    """PayloadError unless the encoder's JSON text keeps batchq's rule (MAX_JSON_DEPTH, no NUL).
    enqueue's hot path: small payloads cost three scans in C (counts and a find), no parse."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH:  # else it cannot nest deeper
        depth = json_depth(text)
        if depth > MAX_JSON_DEPTH:
            raise _too_deep(f"more than {MAX_JSON_DEPTH}")
    if _NUL in text and _ESCAPED_NUL.search(text):
        raise PayloadError(
            "payload has a NUL character (\\u0000) in a string or key, which PostgreSQL cannot store "
            "in JSON (refused on every backend): remove it, or encode binary data (base64)"
        )


def json_depth(text: str, most: int = MAX_JSON_DEPTH + 1) -> int:
    """How deeply the encoder's JSON text nests arrays and objects, counted up to ``most``: its
    strings dropped (escaped backslashes and quotes first), then its innermost pairs, one level
    per pass. All in C string operations: no parse, no regular expression per string."""
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(text.split('"')[::2]).encode("ascii")
    brackets = outside.translate(_ONE_KIND, _NOT_BRACKETS)
    depth = 0
    while brackets and depth < most:
        brackets = brackets.replace(b"[]", b"")
        depth += 1
    return depth


def _too_deep(depth: str) -> PayloadError:
    return PayloadError(
        f"payload is nested {depth} levels deep: batchq stores JSON nested at most {MAX_JSON_DEPTH} "
        "levels (arrays and objects) on every backend (MariaDB's limit); flatten it"
    )


def loads(data: bytes | None, serializer: str, secret: bytes | None) -> Any:
    """Decode a stored payload; a bad signature raises before unpickling."""
    if data is None:
        return None
    if type(data) is not bytes:  # as every claim returns it; else a row written by hand
        data = _stored_bytes(data)
    if serializer == "json":
        try:
            return _json_loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise PayloadError(f"stored payload is not valid JSON: {exc}") from None
        except RecursionError:
            raise PayloadError("stored payload is not valid JSON: nested too deeply to read back") from None
    if serializer == "pickle":
        key = _require_secret(secret)
        signature, body = data[:_SIGNATURE_BYTES], data[_SIGNATURE_BYTES:]
        expected = hmac.new(key, body, hashlib.sha256).digest()
        if len(signature) != _SIGNATURE_BYTES or not hmac.compare_digest(signature, expected):
            raise SignatureError("pickled payload has a missing or wrong signature: refused, never unpickled")
        return pickle.loads(body)  # noqa: S301 - signature verified above
    raise PayloadError(f"stored payload has unknown serializer {serializer!r}")


def _json_loads(text: str) -> Any:
    """json.loads(text). A document with nothing around it (every payload batchq writes) is read
    by raw_decode alone: json.loads and decode were two Python calls and two regex matches more
    per job. Anything else (whitespace around it, text after it, no JSON) goes to json.loads,
    which reads or refuses it as ever."""
    try:
        value, end = _JSON_DECODER.raw_decode(text)
    except ValueError:
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def _stored_bytes(data: Any) -> bytes:
    """A stored payload as bytes: SQLite keeps any value in a BLOB column (text as UTF-8)."""
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise PayloadError(f"stored payload is {type(data).__name__} {str(data)[:40]}, not bytes")


def _require_secret(secret: bytes | None) -> bytes:
    if not secret:
        raise ConfigError(
            f"pickle payloads need a signing secret: set {SECRET_ENV} or pass Queue(secret=...)"
        )
    return secret
