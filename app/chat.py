"""A request's text as a chat model reads it: one user message in the model's own chat template.

The template is the checkpoint meta's `chat_template` (a GGUF file's `tokenizer.chat_template`), a
Jinja2 text rendered in a sandbox (ImmutableSandboxedEnvironment: no attribute tricks, no file or
module access) with what Hugging Face's apply_chat_template passes: messages, bos_token, eos_token,
add_generation_prompt=True, raise_exception. The result is split into pieces: the special tokens
the *template* writes (`<|im_start|>`, `<s>`, ... when the tokenizer has them as one id) and plain
text between them, which the tokenizer encodes as it encodes any text (llama.cpp splits the same way
around special tokens). Special-looking text the user typed stays plain text.

The template comes from a model file, so it renders in a child process (app/chat_sandbox.py) under a time,
memory and output limit, never on the server's request loop: a template that loops, recurses or builds a
huge string is a ChatTemplateError naming the limit, and the server keeps answering. It is rendered once per
template (with a placeholder where the message goes), so the child costs one start per model. What the
template writes is bounded again before it is tokenized (check_output): at most MESSAGE_COPIES times the message
plus MAX_CHAT_OVERHEAD characters, so a template cannot amplify a message into millions of characters.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.cache import LRU

# where a template writes a special token: <|im_start|>, <s>, </s>, <start_of_turn>, [INST], <<SYS>> ...
SPECIAL_SHAPE = re.compile(r"<\|[^\s<>|]{1,40}\|>|<<?/?[A-Za-z_][^\s<>]{0,38}>>?|\[/?[A-Z_]{1,20}\]")
_CONTENT = "\ue000content\ue001"  # private-use marks: where the user's text goes in the rendered template
MAX_TEMPLATE_CHARS = 64_000
MAX_RENDERED_CHARS = 64_000  # what one message's chat may add around it (real templates write a few hundred)
# what is tokenized: at most MESSAGE_COPIES x the message + MAX_CHAT_OVERHEAD characters. A template that wrote the
# message 6,000 times rendered in 0.1 s under every limit above, and each request then tokenized 3 million
# characters before hearing its text was too long. Real templates write the message once, and at most a couple of
# thousand characters around it (a default system prompt)
MESSAGE_COPIES = 2
MAX_CHAT_OVERHEAD = 16_000
RENDER_SECONDS = 3.0  # wall clock for the child (real templates render in milliseconds)
SANDBOX = Path(__file__).with_name("chat_sandbox.py")
_rendered: LRU[dict[str, str]] = LRU(max_entries=64)  # (template, variables) -> rendered text or error: final
_one_at_a_time = threading.Lock()  # a class sending one hostile template at once starts one child, not thirty


class ChatTemplateError(ValueError):
    """The template cannot be rendered (a Jinja error, or no place for the message); the message says why."""


@dataclass(frozen=True)
class Piece:
    text: str
    special: bool  # True: one special token, looked up by its text


def render(template: str, content: str, specials: dict[str, Any]) -> str:
    """The template rendered for one user message `content` (with the assistant's turn opened)."""
    if len(template) > MAX_TEMPLATE_CHARS:
        raise ChatTemplateError(f"the chat template is longer than {MAX_TEMPLATE_CHARS} characters")
    variables = {"messages": [{"role": "user", "content": content}], "add_generation_prompt": True, **specials}
    key = (template, json.dumps(variables, sort_keys=True))
    with _one_at_a_time:
        answer = _rendered.get(key)
        if answer is None:
            answer = _rendered.put(key, _render_in_child(template, variables))
    if "error" in answer:
        raise ChatTemplateError(answer["error"])
    return answer["rendered"]


def _render_in_child(template: str, variables: dict[str, Any]) -> dict[str, str]:
    request = json.dumps({"template": template, "variables": variables, "max_chars": MAX_RENDERED_CHARS})
    try:
        done = subprocess.run([sys.executable, "-I", str(SANDBOX)], input=request, capture_output=True,
                              text=True, timeout=RENDER_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"the chat template takes longer than {RENDER_SECONDS:g} s to render one message"}
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or not isinstance(answer.get("rendered", answer.get("error")), str):
        return {"error": "the chat template stopped its renderer (it ran out of time or memory: "
                         f"exit status {done.returncode})"}
    return {key: str(value) for key, value in answer.items()}


def check_output(chars: int, copies: int, message_chars: int) -> None:
    """Refuse, before anything is tokenized, a chat text longer than MESSAGE_COPIES x the message plus
    MAX_CHAT_OVERHEAD characters (known from the rendered template without building the text)."""
    bound = MESSAGE_COPIES * message_chars + MAX_CHAT_OVERHEAD
    if chars > bound:
        raise ChatTemplateError(
            f"the chat template's output for this message would be {chars:,} characters (it writes the message "
            f"{copies:,} times); at most {MESSAGE_COPIES} x the message + {MAX_CHAT_OVERHEAD:,} characters "
            f"({bound:,} here) are tokenized")


def pieces(template: str, content: str, specials: dict[str, Any], is_special: Callable[[str], bool]) -> list[Piece]:
    """The rendered chat as plain-text and special-token pieces, in order (adjacent plain text joined)."""
    rendered = render(template, _CONTENT, specials)
    copies = rendered.count(_CONTENT)
    if not copies:
        raise ChatTemplateError("the chat template does not write the user's message anywhere")
    check_output(len(rendered) + copies * (len(content) - len(_CONTENT)), copies, len(content))
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
