"""JSON to and from the generated dataclasses, led by their type hints.

A field left None is left out of what is sent, so the server's default holds
(as the Go SDK's omitempty does); fields the server adds that this client
does not know are ignored when reading, so a newer server does not break an
older client. A field whose JSON name is a Python keyword is named with a
trailing underscore (Backfill.from_) and carries its JSON name in its
metadata, under "json" (scripts/generate.py writes it): that name is the one
sent and read.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from datetime import datetime
from typing import Any


def to_json(value: Any) -> Any:
    """value as JSON-ready data: dataclasses become dicts without their None
    fields, datetimes RFC 3339 strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if v is not None:
                out[json_name(f)] = to_json(v)
        return out
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, datetime):
        if value.tzinfo is None:
            # The API wants RFC 3339 with an offset; a naive time has none,
            # and guessing the machine's zone would move it silently.
            raise ValueError(f"{value!r} has no time zone: give it a tzinfo (datetime.timezone.utc)")
        return value.isoformat()
    return value


def from_json(tp: Any, data: Any) -> Any:
    """data, decoded JSON, as the type tp: a dataclass, a list, a dict, a
    datetime, an Optional of one, or a plain value kept as it is."""
    if data is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        # The generated types only use X | None.
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return from_json(inner[0], data)
    if origin is list:
        (item,) = typing.get_args(tp)
        return [from_json(item, v) for v in data]
    if origin is dict:
        _, value = typing.get_args(tp)
        return {k: from_json(value, v) for k, v in data.items()}
    if tp is datetime:
        return datetime.fromisoformat(data)
    if tp is float and isinstance(data, int):
        return float(data)
    if dataclasses.is_dataclass(tp):
        fields = _fields(tp)
        return tp(**{fields[k][0]: from_json(fields[k][1], v) for k, v in data.items() if k in fields})
    return data


def json_name(f: dataclasses.Field[Any]) -> str:
    """The name of a dataclass field on the wire: its own, or the one its
    metadata gives (from for from_)."""
    name: str = f.metadata.get("json", f.name)
    return name


@functools.cache
def _fields(cls: type) -> dict[str, tuple[str, Any]]:
    """A dataclass's fields by JSON name, each as its attribute's name and
    resolved type, read once per class."""
    hints = typing.get_type_hints(cls)
    return {json_name(f): (f.name, hints[f.name]) for f in dataclasses.fields(cls)}
