"""Every text a lab experiment reads states in its schema that it may not be empty: the server refuses ""
(empty_text, or the field's own 422), and a schema that did not say so would let schema-valid requests be
refused (schemathesis found the second prompts: `corrupted`, the steering prompts, the second sentence)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from app.factory import create_app

# The string fields of /api/lab/* that may be empty or are no text, each with why.
NOT_TEXT = {
    "model": "a model's name: one not served is a 404 whatever its length",
    "target_text": "an encoder-decoder's decoder input so far: empty is the start token alone",
    "/api/lab/scaling text": "empty: random vectors only, no model's scores",
}


def resolve(schema: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def strings(name: str, schema: dict[str, Any], spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field, its string schema) for every string a field may hold: itself, its items, its anyOf's, and the
    fields of the objects it holds."""
    schema = resolve(schema, spec)
    for option in schema.get("anyOf", []):
        yield from strings(name, option, spec)
    if schema.get("type") == "string":
        yield name, schema
    if "items" in schema:
        yield from strings(name, schema["items"], spec)
    for field, inner in schema.get("properties", {}).items():
        yield from strings(field, inner, spec)


def lab_text_fields() -> list[tuple[str, str, dict[str, Any]]]:
    spec = create_app().openapi()
    found = []
    for path, methods in spec["paths"].items():
        if not path.startswith("/api/lab/"):
            continue
        for operation in methods.values():
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            fields = list(strings("body", body, spec)) if body else []
            for parameter in operation.get("parameters", []):
                fields += strings(parameter["name"], parameter["schema"], spec)
            found += [(path, field, schema) for field, schema in fields
                      if "enum" not in schema and "const" not in schema]
    return found


def test_every_lab_text_states_its_min_length() -> None:
    fields = lab_text_fields()
    assert len({path for path, _, _ in fields}) >= 10  # the walk finds the lab's texts (a walk that found none passes)
    missing = sorted({f"{path} {field}" for path, field, schema in fields if schema.get("minLength", 0) < 1
                      and field not in NOT_TEXT and f"{path} {field}" not in NOT_TEXT})
    assert not missing, f"text fields without minLength (use app.schemas.Text, or say why in NOT_TEXT): {missing}"


def test_the_walk_sees_the_second_prompts() -> None:
    named = {(path, field) for path, field, _ in lab_text_fields()}
    assert ("/api/lab/activation-patching", "corrupted") in named
    assert ("/api/lab/steering", "a") in named


def test_every_bound_is_one_a_schema_reader_knows() -> None:
    # pydantic writes a bound it cannot place (ge/le on an optional field validated before) as "ge"/"le", which
    # no client reads: schemathesis sent pos=-1 to batch-shapes, schema-valid, and got a 422
    def walk(node: Any, where: str) -> Iterator[str]:
        if isinstance(node, dict):
            yield from (f"{where} {key}" for key in ("ge", "gt", "le", "lt") if key in node)
            for key, value in node.items():
                yield from walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from walk(value, f"{where}/{i}")

    assert not list(walk(create_app().openapi(), "")), "use minimum/maximum (a bound before the validator)"
