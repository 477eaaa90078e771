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
from typing import Any

from .errors import ConfigError, PayloadError, SignatureError

SECRET_ENV = "BATCHQ_SECRET"
_SIGNATURE_BYTES = 32
# One encoder for every payload: json.dumps with options builds a new one per call, a fifth of
# enqueue_many's Python time.
_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def secret_from_env() -> bytes | None:
    value = os.environ.get(SECRET_ENV)
    return value.encode() if value else None


def dumps(payload: Any, serializer: str, secret: bytes | None) -> bytes | None:
    """Encode a payload; raise PayloadError before anything is written."""
    if payload is None:
        return None
    if serializer == "json":
        try:
            return _JSON.encode(payload).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise PayloadError(
                f"payload cannot be stored as JSON ({exc}); pass JSON types (dict, list, str, "
                "int, float, bool, None), or opt in to serializer='pickle' with a secret"
            ) from None
        except UnicodeEncodeError as exc:
            raise PayloadError(f"payload has text that is not valid UTF-8 ({exc.reason})") from None
        except RecursionError:
            raise PayloadError(
                "payload is nested too deeply to store as JSON: flatten it (a few hundred levels at most)"
            ) from None
    if serializer == "pickle":
        key = _require_secret(secret)
        try:
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise PayloadError(f"payload cannot be pickled: {exc}") from None
        return hmac.new(key, data, hashlib.sha256).digest() + data
    raise ConfigError(f"unknown serializer {serializer!r}: use 'json' or 'pickle'")


def loads(data: bytes | None, serializer: str, secret: bytes | None) -> Any:
    """Decode a stored payload; a bad signature raises before unpickling."""
    if data is None:
        return None
    data = _stored_bytes(data)
    if serializer == "json":
        try:
            return json.loads(data.decode("utf-8"))
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
