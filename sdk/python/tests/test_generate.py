"""The generator's conventions, on small documents, and that types_gen.py is
what it makes of sdk/go/openapi.json."""

import importlib.util
import json
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "generate.py"
_spec = importlib.util.spec_from_file_location("generate", SCRIPT)
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


def source(schemas):
    return generate.generate({"components": {"schemas": schemas}})


class Conventions(unittest.TestCase):
    def test_fields(self):
        src = source({"Thing": {"type": "object", "required": ["id", "at"], "properties": {
            "id": {"type": "string", "description": "Its id."},
            "at": {"type": "string", "format": "date-time", "nullable": True},
            "n": {"type": "integer", "x-go-type": "*int"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
            "raw": {"type": "object"},
            "any": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "kind": {"type": "string", "enum": ["a", "b"]},
        }}})
        self.assertIn("    at: datetime | None\n", src)
        self.assertIn('    id: str\n    """Its id."""\n', src)
        self.assertIn("    n: int | None = None\n", src)
        self.assertIn("    tags: list[str] | None = None\n", src)
        self.assertIn("    counts: dict[str, int] | None = None\n", src)
        self.assertIn("    raw: dict[str, Any] | None = None\n", src)
        self.assertIn("    any: Any = None\n", src)
        self.assertIn('    """One of `a` or `b`."""\n', src)
        self.assertLess(src.index("    any:"), src.index("    at:"), "fields in the order of their names")

    def test_names_follow_the_go_sdk(self):
        src = source({
            "Parent": {"type": "object", "properties": {
                "web_hook": {"type": "object", "properties": {"url": {"type": "string"}}},
                "dst": {"type": "object", "x-go-type-name": "DST", "properties": {"gap": {"type": "string"}}},
                "ref": {"allOf": [{"$ref": "#/components/schemas/Inner"}]},
                "spec": {"type": "object", "x-go-type": "map[string]int64", "properties": {"a": {"type": "integer"}}},
            }},
            "Inner": {"type": "object", "x-go-type-name": "innerThing", "properties": {"x": {"type": "boolean"}}},
            "KeyCreate": {"type": "object", "x-go-type-name": "KeyOptions", "properties": {"x": {"type": "string"}}},
            "Hidden": {"type": "object", "x-go-type-name": "-", "properties": {"x": {"type": "string"}}},
        })
        for cls in ("ParentWebHook", "DST", "Inner", "KeyOptions"):
            self.assertIn(f"class {cls}:", src)
        self.assertNotIn("Hidden", src)
        self.assertIn("    ref: Inner | None = None\n", src)
        self.assertIn("    spec: dict[str, int] | None = None\n", src)
        self.assertNotIn("ParentSpec", src, "x-go-type declares nothing")

    def test_what_it_cannot_turn_into_a_type_is_an_error(self):
        for schemas in (
            {"A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/Nope"}}}},
            {"A": {"allOf": [{"type": "object"}, {"type": "object"}]}},
            {"A": {"type": "object", "properties": {"a-b": {"type": "string"}}}},
            {"A": {"type": "object", "properties": {"from": {"type": "string"}, "from_": {"type": "string"}}}},
            {"A": {"type": "object", "properties": {"_field": {"type": "string"}}}},
            {"A": {"type": "object", "properties": {"b": {"type": "object", "x-go-type": "chan int"}}}},
        ):
            with self.subTest(schemas=schemas), self.assertRaises(generate.GenError):
                source(schemas)

    def test_a_keyword_gets_a_trailing_underscore_and_keeps_its_json_name(self):
        schemas = {"Range": {"type": "object", "required": ["from", "to"], "properties": {
            "from": {"type": "string", "format": "date-time"},
            "to": {"type": "string", "format": "date-time"},
            "class": {"type": "string"},
            "field": {"type": "string"},
        }}}
        src = source(schemas)
        self.assertIn("from dataclasses import dataclass, field as _field\n", src)
        self.assertIn('    from_: datetime = _field(metadata={"json": "from"})\n', src)
        self.assertIn('    class_: str | None = _field(default=None, metadata={"json": "class"})\n', src)
        self.assertIn("    field: str | None = None\n", src, "a property named field does not hide the helper")
        self.assertLess(src.index("    class_:"), src.index("    field:"), "fields in the order of their JSON names")
        self.assertEqual(src, source(schemas), "the same document makes the same file")
        self.assertNotIn("_field", source({"A": {"type": "object", "properties": {"b": {"type": "string"}}}}),
                         "the helper is imported only where a field needs it")
        ns = {}
        exec(compile(src, "types_gen.py", "exec"), ns)
        r = ns["Range"](from_="2035-03-01T00:00:00Z", to="2035-03-01T03:00:00Z", field="f")
        self.assertEqual((r.from_, r.field), ("2035-03-01T00:00:00Z", "f"))

    def test_the_output_runs(self):
        src = source({"A": {"type": "object", "required": ["b"], "properties": {"b": {"type": "string"}}}})
        ns = {}
        exec(compile(src, "types_gen.py", "exec"), ns)
        self.assertEqual(ns["A"](b="x").b, "x")
        with self.assertRaises(TypeError, msg="a required field has no default"):
            ns["A"]()


class Committed(unittest.TestCase):
    def test_types_gen_is_up_to_date(self):
        want = generate.generate(json.loads(generate.DEFAULT_IN.read_text()))
        self.assertTrue(want == generate.DEFAULT_OUT.read_text(),
                        f"{generate.DEFAULT_OUT} is stale: run python3 {SCRIPT}")


if __name__ == "__main__":
    unittest.main()
