"""A recursive check that a JSON schema is 'strict': what strict structured outputs accept.

Strict means: every object schema has `additionalProperties: false` and lists every one of its properties in
`required`, at every depth (including `$defs`, array items and `anyOf` branches).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def strict_schema_violations(schema: dict[str, Any]) -> list[str]:
    """Return one message per violation, each naming the JSON path of the offending object."""
    problems: list[str] = []
    _walk(schema, "#", problems)
    return problems


def assert_strict_model(model: type[BaseModel]) -> dict[str, Any]:
    """Return the model's JSON schema, or raise ValueError naming every non-strict path."""
    schema = model.model_json_schema()
    problems = strict_schema_violations(schema)
    if problems:
        raise ValueError(f"{model.__name__} schema is not strict: " + "; ".join(problems))
    return schema


def _walk(node: Any, path: str, problems: list[str]) -> None:
    if isinstance(node, list):
        for index, item in enumerate(node):
            _walk(item, f"{path}/{index}", problems)
        return
    if not isinstance(node, dict):
        return
    is_object = node.get("type") == "object" or "properties" in node
    if is_object:
        if node.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties must be false")
        properties = node.get("properties", {})
        missing = sorted(set(properties) - set(node.get("required", [])))
        if missing:
            problems.append(f"{path}: properties not required: {', '.join(missing)}")
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions", "patternProperties"):
            if isinstance(value, dict):
                for name, sub in value.items():
                    _walk(sub, f"{path}/{key}/{name}", problems)
        elif isinstance(value, dict | list):
            _walk(value, f"{path}/{key}", problems)
