"""A request's text as a chat model reads it: one user message in the model's own chat template.

The template is the checkpoint meta's `chat_template` (a GGUF file's `tokenizer.chat_template`), a
Jinja2 text rendered in a sandbox (ImmutableSandboxedEnvironment: no attribute tricks, no file or
module access) with what Hugging Face's apply_chat_template passes: messages, bos_token, eos_token,
add_generation_prompt=True, raise_exception. The result is split into pieces: the special tokens
the *template* writes (`<|im_start|>`, `<s>`, ... when the tokenizer has them as one id) and plain
text between them, which the tokenizer encodes as it encodes any text (llama.cpp splits the same way
around special tokens). Special-looking text the user typed stays plain text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

# where a template writes a special token: <|im_start|>, <s>, </s>, <start_of_turn>, [INST], <<SYS>> ...
SPECIAL_SHAPE = re.compile(r"<\|[^\s<>|]{1,40}\|>|<<?/?[A-Za-z_][^\s<>]{0,38}>>?|\[/?[A-Z_]{1,20}\]")
_CONTENT = "\ue000content\ue001"  # private-use marks: where the user's text goes in the rendered template
MAX_TEMPLATE_CHARS = 64_000


class ChatTemplateError(ValueError):
    """The template cannot be rendered (a Jinja error, or no place for the message); the message says why."""


@dataclass(frozen=True)
class Piece:
    text: str
    special: bool  # True: one special token, looked up by its text


def _raise(message: str) -> None:
    raise ChatTemplateError(f"the chat template raised: {message}")


def render(template: str, content: str, specials: dict[str, Any]) -> str:
    """The template rendered for one user message `content` (with the assistant's turn opened)."""
    if len(template) > MAX_TEMPLATE_CHARS:
        raise ChatTemplateError(f"the chat template is longer than {MAX_TEMPLATE_CHARS} characters")
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise
    try:
        compiled = env.from_string(template)
        return compiled.render(messages=[{"role": "user", "content": content}], add_generation_prompt=True,
                               **specials)
    except ChatTemplateError:
        raise
    except (TemplateError, TypeError, ValueError, KeyError, IndexError, AttributeError) as error:
        raise ChatTemplateError(f"the chat template cannot be rendered: {type(error).__name__}: {error}") from error


def pieces(template: str, content: str, specials: dict[str, Any], is_special: Callable[[str], bool]) -> list[Piece]:
    """The rendered chat as plain-text and special-token pieces, in order (adjacent plain text joined)."""
    rendered = render(template, _CONTENT, specials)
    if _CONTENT not in rendered:
        raise ChatTemplateError("the chat template does not write the user's message anywhere")
    out: list[Piece] = []

    def plain(text: str) -> None:
        if not text:
            return
        if out and not out[-1].special:
            out[-1] = Piece(out[-1].text + text, False)
        else:
            out.append(Piece(text, False))

    for index, part in enumerate(rendered.split(_CONTENT)):
        if index:
            plain(content)
        at = 0
        for match in SPECIAL_SHAPE.finditer(part):
            if is_special(match.group()):
                plain(part[at:match.start()])
                out.append(Piece(match.group(), True))
                at = match.end()
        plain(part[at:])
    return out
