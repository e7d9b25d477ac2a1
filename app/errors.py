"""One error shape for every failure: {"error": {"code", "message"}}, written for a student.

A refusal a page words in its own language also carries `details`: {"reason", and the values it names}
(static/text/shared.<lang>.json: messages_detail_<reason>), so a Chinese page is as specific as the English
message; a field in `details` is the API's name, which the page shows by its on-screen label.

Messages never echo the submitted text back (pydantic's validation errors carry the
`input`; only its location and reason are kept).
"""

from __future__ import annotations

import functools
import logging
import typing
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.compression import ApiJSONResponse
from model.generate import NonFiniteError

log = logging.getLogger("transformer_explorer")


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, headers: dict[str, str] | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.extra = extra or {}  # numbers a page needs to say the refusal in its own language (model_loading)

    def with_details(self, reason: str, **values: Any) -> ApiError:
        """The refusal's reason and values, for a page to word it in its own language (`error.details`)."""
        self.extra["details"] = {"reason": reason, **values}
        return self


def error_response(status: int, code: str, message: str, headers: Mapping[str, str] | None = None,
                   extra: Mapping[str, Any] | None = None) -> ApiJSONResponse:
    return ApiJSONResponse({"error": {"code": code, "message": message, **(extra or {})}}, status_code=status,
                           headers=headers)


# ---------------------------------------------------------------- every error code the API answers with
# 404 unknown_model, model_refused, unknown_chapter, unknown_question, chapter_model_missing · 413 body_too_large ·
# 422 empty_text, text_too_long, out_of_range, unknown_stage, invalid_answer,
# unknown_snapshot, invalid_config, model_too_large, response_too_large, not_in_model, conflicting_fields,
# invalid_request, invalid_json, nonfinite,
# invalid_intervention, not_generative, invalid_option, too_much_work, beyond_context · 503 busy, model_loading ·
# 500 internal;
# from the connection guard (app.http_guard): 400 invalid_http, 408 request_timeout, 413 body_too_large,
# 429 too_many_requests, 431 headers_too_large; and 404 not_found, 405 method_not_allowed from routing


def unknown_model(known: list[str]) -> ApiError:
    listed = ", ".join(known) if known else "none are loaded"
    return ApiError(404, "unknown_model", f"There is no model with that name. Known models: {listed}.")


def model_refused(name: str, reason: str) -> ApiError:
    return ApiError(404, "model_refused", f"The model {name} was found but is not offered: {reason}")


def unknown_chapter(known: list[str]) -> ApiError:
    return ApiError(404, "unknown_chapter", f"There is no chapter with that name. Chapters: {', '.join(known)} "
                                           f"(or their numbers, 1 to {len(known)}).")


def unknown_question(chapter: str, known: list[str]) -> ApiError:
    return ApiError(404, "unknown_question", f"Chapter {chapter} has no question with that id. Its questions: "
                                             f"{', '.join(known)}.").with_details("unknown_question", known=known)


def invalid_answer(message: str, expected: str, options: list[Any]) -> ApiError:
    """An answer of the wrong type for its question (lessons.questions.AnswerError), or one without a question."""
    return ApiError(422, "invalid_answer", f"That answer does not fit the question: {message}.").with_details(
        f"answer_{expected}", options=options)


def chapter_model_missing(chapter: str, model: str) -> ApiError:
    return ApiError(404, "chapter_model_missing", f"Chapter {chapter} is shown on {model}, which this server does "
                                                  "not offer, so its claims cannot be measured here.")


def unknown_snapshot(model: str, step: int, steps: list[int]) -> ApiError:
    listed = ", ".join(map(str, steps)) if steps else "none"
    return ApiError(422, "unknown_snapshot",
                    f"Model '{model}' has no training snapshot at step {shown(step)}. Snapshots: {listed}.")


def snapshot_unreadable(step: int) -> ApiError:
    return ApiError(422, "unknown_snapshot", f"The snapshot at step {shown(step)} cannot be loaded.")


def invalid_config(reason: object) -> ApiError:
    return ApiError(422, "invalid_config", f"This configuration cannot work: {reason}.")


def invalid_request(message: str) -> ApiError:
    return ApiError(422, "invalid_request", message)


def not_in_model(message: str) -> ApiError:
    """A well-formed request for something the chosen model does not have (cross-attention, a stack, ...)."""
    return ApiError(422, "not_in_model", message)


def conflicting_fields(message: str) -> ApiError:
    """Fields that are each valid but cannot be asked for together."""
    return ApiError(422, "conflicting_fields", message)


def empty_text(field: str = "text") -> ApiError:
    return ApiError(422, "empty_text", f"The {field} is empty — type a sentence first.")


def no_tokens() -> ApiError:
    return ApiError(422, "empty_text", "The text gave no tokens for this model — try other characters.")


def no_start_token() -> ApiError:
    return ApiError(422, "empty_text",
                    "This model has no start token: give the decoder some target_text to start from.")


def text_too_short(why: str) -> ApiError:
    """A text with too few tokens for what was asked (a next-token loss needs two)."""
    return ApiError(422, "text_too_short", why)


def text_too_long(field: str, max_chars: int, length: int | None = None) -> ApiError:
    """A text over the character limit: refused whole, never cut (the page says how long it is and the limit)."""
    counted = f" ({length:,} characters)" if length is not None else ""
    return ApiError(422, "text_too_long", f"The {field}{counted} is longer than the limit of {max_chars} characters "
                                          "— shorten it; nothing was cut.").with_details(
        "too_many_chars", field=field, limit=max_chars, **({} if length is None else {"length": length}))


def too_many_tokens(field: str, count: int, limit: int) -> ApiError:
    return ApiError(422, "text_too_long",
                    f"The {field} is {count} tokens long; the limit is {limit} tokens — shorten it.").with_details(
        "too_many_tokens", field=field, count=count, limit=limit)


def not_one_token(field: str, text: str, pieces: list[dict[str, Any]]) -> ApiError:
    """A token typed as text that is several tokens (or none) for this model: its pieces ({text, start, end}, the
    spans in `text`, so a page names byte pieces by the character they spell) shown."""
    shown_pieces = " + ".join(f"“{p['text']}”" for p in pieces) or "nothing"
    return invalid_option(field, f"“{text}” is {len(pieces)} tokens for this model ({shown_pieces}); give text that "
                                 "is exactly one token (mind the leading space, as in “ Paris”).").with_details(
        "not_one_token", field=field, text=text, count=len(pieces), pieces=pieces)


def missing_space(field: str, text: str, suggestion: str) -> ApiError:
    """A token typed without the leading space that the word after a sentence (ending in no space) has."""
    return invalid_option(field, f"“{text}” has no leading space, but the word after your sentence starts with one: "
                                 f"the model's token there is “{suggestion}”. Type “{suggestion}” (or end the "
                                 f"sentence with a space to ask for “{text}”).").with_details(
        "missing_space", field=field, text=text, suggestion=suggestion)


def shown(number: int) -> str:
    """A number from the request, as a message may show it: a short one as it is, never thousands of digits."""
    return str(number) if abs(number) < 10**6 else ("a huge number" if number > 0 else "a huge negative number")


def out_of_range(what: str, value: int, count: int) -> ApiError:
    error = ApiError(422, "out_of_range",
                     f"{what} {shown(value)} does not exist: this model has {count}, numbered 0 to {count - 1}.")
    if abs(value) < 10**6:  # a page words it with its own word for `what` (layer, head, position)
        error.with_details("out_of_range", what=what.lower(), value=value, count=count, last=count - 1)
    return error


def unknown_stage(index: int) -> ApiError:
    return ApiError(
        422, "unknown_stage",
        f"`stages[{index}]` names no stage of this model — GET /api/models/{{name}} lists every stage name under "
        "`stages`; patterns such as 'blocks.0.attn.*' work too.",
    )


def model_too_large(parameters: int, limit: int) -> ApiError:
    return ApiError(422, "model_too_large",
                    f"This configuration has {parameters:,} parameters; the limit for a from-scratch model is "
                    f"{limit:,} — use a smaller d_model, d_mlp or fewer layers.")


def response_too_large(cells: int, limit: int) -> ApiError:
    return ApiError(422, "response_too_large",
                    f"This answer would hold {cells:,} numbers; the limit is {limit:,}. Ask for less: fewer "
                    "`stages` (or a pattern such as 'blocks.0.attn.*'), some `layers`, some `heads`, "
                    "or a shorter text.")


def invalid_intervention(message: str) -> ApiError:
    return ApiError(422, "invalid_intervention", message)


def not_generative() -> ApiError:
    return ApiError(422, "not_generative",
                    "This model is an encoder: it reads the whole text at once and has no next-token "
                    "prediction. Pick a decoder model (like tiny-gpt) to predict.")


def invalid_option(option: str, message: str) -> ApiError:
    """A lab option that cannot work with this model or these sizes; the message names it."""
    return ApiError(422, "invalid_option", f"`{option}`: {message}")


def too_much_work(option: str, amount: int, limit: int, what: str) -> ApiError:
    return ApiError(422, "too_much_work",
                    f"`{option}` asks for {amount:,} {what}; the limit is {limit:,} — make `{option}` smaller.")


def beyond_context(model: str, length: int, n_ctx: int) -> ApiError:
    return ApiError(422, "beyond_context",
                    f"`length` {length} is past what '{model}' was trained on: its learned position table has "
                    f"rows for positions 0 to {n_ctx - 1} only (n_ctx = {n_ctx}), and there is no row to look up "
                    "beyond it. Sinusoidal, RoPE and ALiBi positions are formulas and go on past any length.")


def busy() -> ApiError:
    return ApiError(503, "busy", "The server is busy with other requests — try again in a moment.",
                    headers={"Retry-After": "1"})


def model_loading(name: str, done: int, total: int) -> ApiError:
    """A model still loading (a big file takes a minute or more): the page says how far it is and asks again."""
    percent = int(100 * done / total) if total else 0
    return ApiError(503, "model_loading", f"The model {name} is still loading ({percent} % done) — try again in a "
                                          "few seconds.", headers={"Retry-After": "5"}, extra={"percent": percent})


def models_at_budget(what: str) -> ApiError:
    """A model that would take the live ones of its kind past their memory budget: they go as requests end."""
    return ApiError(503, "busy", f"The server is holding as many {what} as its memory budget allows — "
                                 "try again in a moment.", headers={"Retry-After": "1"})


def body_too_large(limit_bytes: int) -> ApiJSONResponse:
    kb = limit_bytes // 1024
    # the connection closes after it: the unread rest of the body would otherwise be read as the next request
    return error_response(413, "body_too_large", f"The request is larger than {kb} KB — send a shorter text.",
                          {"Connection": "close"})


EXAMPLE_BODY = '{"text": "The cat sat on the mat."}'
UNREADABLE_JSON = ("The request body could not be read as JSON: check its quotes, commas and brackets (a body nested "
                   "thousands of levels deep, or with a number thousands of digits long, cannot be read either).")


_BOUNDS = {"less_than_equal": ("too_large", "le"), "less_than": ("too_large", "lt"),
           "greater_than_equal": ("too_small", "ge"), "greater_than": ("too_small", "gt"),
           "string_too_long": ("too_many_chars", "max_length"), "too_long": ("too_many_items", "max_length")}


def _validation_details(exc: RequestValidationError) -> dict[str, Any] | None:
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


def _describe_validation(exc: RequestValidationError, body_model: object = None) -> tuple[str, str]:
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


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> ApiJSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.headers, exc.extra)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> ApiJSONResponse:
        body_field = getattr(request.scope.get("route"), "body_field", None)
        code, message = _describe_validation(exc, getattr(getattr(body_field, "field_info", None), "annotation", None))
        details = _validation_details(exc) if code == "invalid_request" else None
        return error_response(422, code, message, extra={"details": details} if details else None)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> ApiJSONResponse:
        if exc.status_code == 400:  # a body FastAPI could not parse: the same answer as malformed JSON
            return error_response(422, "invalid_json", UNREADABLE_JSON)
        codes = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}
        message = exc.detail if isinstance(exc.detail, str) else "The request could not be served."
        if exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "another method")
            message = f"This endpoint answers only {allowed} (/docs lists every endpoint and its method)."
        if exc.status_code == 404 and message == "Not Found":
            message = "There is no such page or endpoint. The API is listed at /docs."
        return error_response(exc.status_code, codes.get(exc.status_code, "http_error"), message, exc.headers)

    @app.exception_handler(NonFiniteError)
    async def nonfinite(_: Request, exc: NonFiniteError) -> ApiJSONResponse:
        return error_response(422, "nonfinite", f"The model computed something that is not a number: {exc}. "
                                                "POST /api/trace counts such cells in each stage (`nonfinite`).")

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> ApiJSONResponse:
        log.exception("unexpected error")  # the details go to the server log, not to the client
        return error_response(500, "internal", "Something went wrong on the server; the request was not served.")
