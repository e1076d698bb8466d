#!/usr/bin/env python3
"""Writes the Python client's wire types, src/tock/types_gen.py, from the API's
OpenAPI document, sdk/go/openapi.json: the document the dashboard serves,
which the Go SDK's types are generated from too, so both clients follow the
API without a hand copy. It uses the standard library only, like the client.

    python3 sdk/python/scripts/generate.py          # rewrite types_gen.py
    python3 sdk/python/scripts/generate.py --check  # fail if it is stale

The conventions are the Go generator's (sdk/go/internal/gen), so that a type
has the same name in both clients:

- every schema under components.schemas that is an object with properties
  becomes a dataclass (keyword-only) of the same name, or of the name its
  x-go-type-name gives when that is an exported Go name; "-" declares none;
- an object with properties written in place is a dataclass of its own, named
  by its x-go-type-name or after its parent and the field (Notify's webhook is
  NotifyWebhook);
- a field is named as its JSON property, its docstring is the property's
  description, and the fields are in the order of their JSON names; a JSON
  name that is a Python keyword ("from") gets a trailing underscore (from_,
  PEP 8's convention) and keeps its JSON name in the field's metadata
  ({"json": "from"}), which the client reads and writes on the wire;
- string is str, or datetime with format date-time; integer is int; number is
  float; boolean is bool; an array is a list, an object with
  additionalProperties a dict with str keys, a free-form object
  dict[str, Any]; oneOf, anyOf or no type at all is Any;
- where the schema gives the Go SDK a type of its own (x-go-type), the
  Python type is that type's counterpart ("map[string]int64" is
  dict[str, int], "JobSpec" the JobSpec dataclass);
- a required property has no default; any other is Optional, default None.
  None is never sent: a field left None is left out of the request.
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import sys
import textwrap
from pathlib import Path
from typing import Any

# Schema is one JSON schema of the document, as decoded.
Schema = dict[str, Any]

HERE = Path(__file__).resolve().parent
DEFAULT_IN = HERE.parent.parent / "go" / "openapi.json"
DEFAULT_OUT = HERE.parent / "src" / "tock" / "types_gen.py"

# The Python counterparts of the Go types that x-go-type names.
GO_BASIC = {
    "string": "str",
    "bool": "bool",
    "int": "int",
    "int32": "int",
    "int64": "int",
    "float64": "float",
    "time.Time": "datetime",
    "json.RawMessage": "Any",
    "any": "Any",
}

# Go's initialisms, as the Go generator writes them in type names.
INITIALISMS = {
    "id": "ID", "ids": "IDs", "url": "URL", "utc": "UTC", "ms": "MS",
    "ttl": "TTL", "html": "HTML", "dst": "DST",
}


# The key of a field's metadata that holds its JSON name, where that is not
# the field's own name (src/tock/_wire.py reads it), and the name the
# generated module gives dataclasses.field to set it: not field, which a
# property of the same class may be named (ErrorDetail's is), shadowing it in
# the class's body.
JSON_NAME = "json"
FIELD = "_field"


class GenError(Exception):
    """A schema the conventions above cannot turn into a type."""


def py_name(json_name: str) -> str:
    """The field's name for a JSON name: the name itself, or with a trailing
    underscore when it is a keyword (from → from_); one that is no Python
    name at all (a-b) has none."""
    if not json_name.isidentifier():
        return ""
    return json_name + "_" if keyword.iskeyword(json_name) else json_name


def go_name(json_name: str) -> str:
    """The Go SDK's name for a JSON name: run_at → RunAt, job_id → JobID."""
    return "".join(INITIALISMS.get(w) or w[:1].upper() + w[1:] for w in json_name.split("_"))


def ref_of(s: Schema) -> str:
    """The schema name s refers to, directly or as an allOf of one $ref; "" if none."""
    ref = s.get("$ref", "")
    all_of = s.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        ref = all_of[0].get("$ref", "")
    return ref.removeprefix("#/components/schemas/")


def has_properties(s: Schema) -> bool:
    return bool(s.get("properties"))


def describe(p: Schema) -> str:
    """A field's docstring: its description, and the values of an enum the
    description does not show each of (the Go generator's rule)."""
    desc = p.get("description", "")
    enum = p.get("enum")
    if enum is None and isinstance(p.get("items"), dict):
        enum = p["items"].get("enum")
    values = [f"`{v}`" for v in enum or []]
    if not values or all(v in desc for v in values):
        return desc
    listed = values[0] if len(values) == 1 else ", ".join(values[:-1]) + " or " + values[-1]
    lead = desc + " " if desc else ""
    return lead + ("Always " if len(values) == 1 else "One of ") + listed + "."


def docstring(text: str, indent: str) -> list[str]:
    """text as a docstring, wrapped at 79 columns."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    width = 79 - len(indent)
    lines: list[str] = []
    for para in text.split("\n"):
        lines += textwrap.wrap(para, width - 3, break_long_words=False, break_on_hyphens=False) or [""]
    if len(lines) == 1 and len(lines[0]) + 6 <= width:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}', *[f"{indent}{l}".rstrip() for l in lines[1:]], f'{indent}"""']


class Decl:
    """A dataclass to declare: a schema under components.schemas, or an
    object written in place at path (Parent.field, [] for an array's items,
    {} for a map's values)."""

    def __init__(self, name: str, path: str, component: bool, schema: Schema):
        self.name, self.path, self.component, self.schema = name, path, component, schema

    def what(self) -> str:
        if self.component:
            return f"the API's {self.path} schema"
        if self.path.endswith("[]"):
            return f"the schema of the items of {self.path[:-2]}"
        if self.path.endswith("{}"):
            return f"the schema of the values of {self.path[:-2]}"
        return f"the schema of {self.path}"


class Generator:
    """Turns the schemas of one document into the source of types_gen.py."""

    def __init__(self, schemas: Schema):
        self.schemas = schemas
        # types maps a schema's name to its Python type: a dataclass, or
        # "dict[str, Any]" for a free-form schema; None for none.
        self.types: dict[str, str | None] = {}
        # go_types maps the Go SDK's type names to the Python types, for x-go-type.
        self.go_types: dict[str, str] = {}
        self.decls: dict[str, Decl] = {}
        self.queue: list[Decl] = []
        # renamed says whether a field's name differs from its JSON name,
        # which then rides in its metadata (dataclasses.field).
        self.renamed = False

    def run(self) -> str:
        for name in sorted(self.schemas):
            s = self.schemas[name]
            go = s.get("x-go-type-name", name)
            if go == "-":
                self.types[name] = None
            elif has_properties(s):
                py = go if go[:1].isupper() else name
                self.types[name] = self.go_types[go] = py
                self.declare(Decl(py, name, True, s))
            elif s.get("type") == "object" and "allOf" not in s:
                self.types[name] = "dict[str, Any]"
            else:
                raise GenError(f'schema {name}: neither an object with properties nor a free-form object; give it x-go-type-name "-"')
        classes: dict[str, str] = {}
        while self.queue:
            d = self.queue.pop(0)
            classes[d.name] = self.dataclass_of(d)
        head = [
            "# Code generated by scripts/generate.py from openapi.json; DO NOT EDIT.",
            '"""The API\'s request and answer bodies, generated from its OpenAPI document."""',
            "",
            "from __future__ import annotations",
            "",
            "from dataclasses import dataclass" + (f", field as {FIELD}" if self.renamed else ""),
            "from datetime import datetime",
            "from typing import Any",
            "",
            "__all__ = [",
            *[f'    "{n}",' for n in sorted(classes)],
            "]",
        ]
        return "\n".join(head) + "\n" + "".join("\n\n" + classes[n] for n in sorted(classes))

    def declare(self, d: Decl) -> None:
        if d.name in self.decls:
            raise GenError(f"{self.decls[d.name].path} and {d.path} are both type {d.name}; name one with x-go-type-name")
        self.decls[d.name] = d
        self.queue.append(d)

    def dataclass_of(self, d: Decl) -> str:
        props = d.schema.get("properties", {})
        required = set(d.schema.get("required", []))
        doc = f"{d.name} is {d.what()}."
        if d.schema.get("description"):
            doc += " " + d.schema["description"]
        out = ["@dataclass(kw_only=True)", f"class {d.name}:", *docstring(doc, "    ")]
        fields: dict[str, str] = {}
        for name in sorted(props):
            p = props[name]
            field = py_name(name)
            if not field or field == FIELD:
                raise GenError(f"{d.path}: property {name!r} is not a Python name")
            if field in fields:
                raise GenError(f"{d.path}: properties {fields[field]!r} and {name!r} are both field {field}")
            fields[field] = name
            t = self.type_of(p, d.name + go_name(name), f"{d.path}.{name}")
            req = name in required
            if (not req or p.get("nullable")) and t != "Any":
                t += " | None"
            if field == name:
                default = "" if req else " = None"
            else:
                self.renamed = True
                meta = f"metadata={{{json.dumps(JSON_NAME)}: {json.dumps(name)}}}"
                default = f" = {FIELD}({meta})" if req else f" = {FIELD}(default=None, {meta})"
            out.append("")
            out.append(f"    {field}: {t}{default}")
            if desc := describe(p):
                out += docstring(desc, "    ")
        return "\n".join(out) + "\n"

    def type_of(self, s: Schema, name: str, where: str) -> str:
        """The Python type of s, declaring the dataclass of an object written
        in place under name; where is s's path (see Decl)."""
        if "x-go-type" in s:
            return self.from_go(s["x-go-type"], where)
        if ref := ref_of(s):
            if ref not in self.types:
                raise GenError(f"{where}: $ref to {ref}, which is not under components.schemas")
            if (t := self.types[ref]) is None:
                raise GenError(f'{where}: $ref to {ref}, which declares no type (x-go-type-name "-")')
            return t
        if "allOf" in s:
            raise GenError(f"{where}: an allOf that is not one $ref; give it x-go-type")
        if "oneOf" in s or "anyOf" in s:
            return "Any"
        match s.get("type"):
            case None:
                return "Any"
            case "string":
                return "datetime" if s.get("format") == "date-time" else "str"
            case "integer":
                return "int"
            case "number":
                return "float"
            case "boolean":
                return "bool"
            case "array":
                if not isinstance(s.get("items"), dict):
                    raise GenError(f"{where}: an array without items")
                return f"list[{self.type_of(s['items'], name, where + '[]')}]"
            case "object" if has_properties(s):
                tn = s.get("x-go-type-name", name)
                self.declare(Decl(tn, where, False, s))
                return tn
            case "object" if isinstance(s.get("additionalProperties"), dict):
                return f"dict[str, {self.type_of(s['additionalProperties'], name + 'Value', where + '{}')}]"
            case "object":
                return "dict[str, Any]"
            case other:
                raise GenError(f"{where}: unknown type {other!r}")

    def from_go(self, go: str, where: str) -> str:
        """The Python counterpart of a Go type as x-go-type writes it."""
        go = go.lstrip("*")
        if go.startswith("[]"):
            return f"list[{self.from_go(go[2:], where)}]"
        if go.startswith("map[string]"):
            return f"dict[str, {self.from_go(go.removeprefix('map[string]'), where)}]"
        if go in GO_BASIC:
            return GO_BASIC[go]
        if go in self.go_types:
            return self.go_types[go]
        raise GenError(f"{where}: x-go-type {go!r} has no Python counterpart")


def generate(doc: Schema) -> str:
    """The source of types_gen.py for the OpenAPI document doc."""
    schemas = doc.get("components", {}).get("schemas")
    if not schemas:
        raise GenError("no components.schemas")
    return Generator(schemas).run()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--in", dest="src", type=Path, default=DEFAULT_IN, help="the OpenAPI document")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the Python module to write")
    ap.add_argument("--check", action="store_true", help="write nothing; fail if --out is not what it would be")
    args = ap.parse_args()
    try:
        want = generate(json.loads(args.src.read_text()))
    except (OSError, ValueError, GenError) as e:
        print(f"generate: {args.src}: {e}", file=sys.stderr)
        return 1
    if not args.check:
        args.out.write_text(want)
        return 0
    have = args.out.read_text() if args.out.exists() else ""
    if have == want:
        return 0
    diff = list(difflib.unified_diff(have.splitlines(), want.splitlines(), str(args.out), "generated", lineterm="", n=1))
    print("\n".join(diff[:40] + (["…"] if len(diff) > 40 else [])), file=sys.stderr)
    rerun = " ".join([str(Path(__file__).resolve()), *(a for a in sys.argv[1:] if a != "--check")])
    print(f"generate: {args.out} is stale; run: python3 {rerun}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
