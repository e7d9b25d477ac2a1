"""A request that failed validation, worded for a student (app/errors.py answers it): which field, what was wrong,
without echoing the submitted value; and the `details` a page words in its own language."""

from __future__ import annotations

import functools
import typing
from typing import Any

from fastapi.exceptions import RequestValidationError

EXAMPLE_BODY = '{"text": "The cat sat on the mat."}'
UNREADABLE_JSON = ("The request body could not be read as JSON: check its quotes, commas and brackets (a body nested "
                   "thousands of levels deep, or with a number thousands of digits long, cannot be read either).")


_BOUNDS = {"less_than_equal": ("too_large", "le"), "less_than": ("too_large", "lt"),
           "greater_than_equal": ("too_small", "ge"), "greater_than": ("too_small", "gt"),
           "string_too_long": ("too_many_chars", "max_length"), "too_long": ("too_many_items", "max_length")}


def validation_details(exc: RequestValidationError) -> dict[str, Any] | None:
    """A number or length over its bound, as `details` a page words with the field's on-screen label: the first
    error's field (the API's name, never a key the client made up), its reason and its limit; None otherwise."""
    errors = exc.errors()
    first = errors[0] if errors else {}
    bound = _BOUNDS.get(str(first.get("type")))
    names = [part for part in first.get("loc", ()) if isinstance(part, str) and part in _field_names()]
    limit = (first.get("ctx") or {}).get(bound[1]) if bound else None
    if bound is None or not names or not isinstance(limit, int | float):
        return None
    given = first.get("input")
    length = {"length": len(given)} if bound[0] == "too_many_chars" and isinstance(given, str) else {}
    return {"reason": bound[0], "field": names[-1], "limit": limit, **length}  # a length, never the text itself


def describe_validation(exc: RequestValidationError, body_model: object = None) -> tuple[str, str]:
    """(code, message) from pydantic errors, keeping location and reason, dropping the input.

    A location shows only the API's own field names and list indices: a key the client made up (an unknown
    field) is never repeated back; the fields that would have been right are listed instead (a typo such as
    `no_scal` shows beside `no_scale`). `body_model`: the request model of the route, when there is one."""
    errors = exc.errors()
    if any(e.get("type") == "json_invalid" for e in errors):
        return "invalid_json", UNREADABLE_JSON
    parts = []
    for error in errors[:5]:
        raw_loc = tuple(error.get("loc", ()))
        kind = error.get("type")
        if raw_loc == ("body",):  # the body as a whole: empty, or not a JSON object
            what = "is empty" if kind == "missing" else "is not a JSON object"
            return "invalid_request", (f"The request body {what}: send a JSON object such as {EXAMPLE_BODY}, "
                                       "with the header Content-Type: application/json.")
        if kind == "extra_forbidden":
            parent = _location(raw_loc[:-1])
            where = f"'{parent}' has" if parent else "it has"
            known = _fields_below(body_model, raw_loc[1:-1]) if raw_loc[:1] == ("body",) else None
            listed = f"its fields are {', '.join(known)}" if known else "/docs lists its fields"
            parts.append(f"{where} a field this endpoint does not know ({listed})")
            continue
        loc = _location(raw_loc)
        if kind == "missing":
            parts.append(f"'{loc}' is required")
        else:
            reason = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
            parts.append(f"'{loc}': {reason}" if loc else reason)
    return "invalid_request", "The request is not valid: " + "; ".join(parts) + "."


def _location(loc: tuple[Any, ...]) -> str:
    """`config.d_model`, `stages[0]`: the API's field names and list indices; anything else is left out."""
    shown_loc = ""
    for part in loc:
        if isinstance(part, int):
            shown_loc += f"[{part}]"
        elif part in _field_names():
            shown_loc += f".{part}" if shown_loc else part
    return shown_loc


def _fields_below(model: object, path: tuple[Any, ...]) -> list[str] | None:
    """The field names of the request model found along `path` (field names and list indices) from `model`."""
    for part in path:
        if isinstance(part, int):
            continue
        fields = getattr(model, "model_fields", {})
        model = _model_in(fields[part].annotation) if part in fields else None
    fields = getattr(model, "model_fields", None)
    return sorted(fields) if fields else None


def _model_in(annotation: object) -> object:
    """The pydantic model inside an annotation such as `InterventionsIn | None` or `list[InlineConfig]`."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, typing.get_args(annotation)) if m is not None), None)


@functools.cache
def _field_names() -> frozenset[str]:
    """Every field name of the API's models (pydantic's locations also hold its own labels and keys a client made
    up; only these are shown). The models are every pydantic model defined in app/ (app.schemas, app.lab.*): the
    app has imported them all by the time it answers its first request."""
    from pydantic import BaseModel

    names: set[str] = set()
    todo: list[type[BaseModel]] = [BaseModel]
    while todo:
        model = todo.pop()
        todo += model.__subclasses__()
        if model.__module__.startswith("app."):
            names.update(model.model_fields)
            names.update(f.alias for f in model.model_fields.values() if f.alias)
    return frozenset(names)
