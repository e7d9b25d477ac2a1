"""Render one chat template in this process, which app/chat.py starts as a child and may kill.

A template comes from a model file, so it is hostile until proven otherwise. Jinja's sandbox stops attribute
tricks and file access, but not work: `9 ** (9 ** 9)`, `'a' * 10**9`, nested loops and endless macro
recursion all run happily inside it. So the parent runs this file in a separate process with a wall-clock
limit, and this process caps its own address space and CPU time before it reads the template, and stops
writing after MAX_OUTPUT_CHARS.

Reads {"template", "variables", "max_chars"} as JSON on stdin; writes {"rendered": str} or {"error": str}.
Imports nothing from the project (it starts in a fresh interpreter, cheaply).
"""

from __future__ import annotations

import json
import sys
from typing import Any

MEMORY_BYTES = 512 * 1024 * 1024
CPU_SECONDS = 5


def limit_self() -> None:
    try:
        import resource
    except ImportError:  # not a Unix: the parent's wall-clock limit still holds
        return
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


class TemplateRaised(Exception):
    pass


def raise_exception(message: str) -> None:
    raise TemplateRaised(message)


def render(template: str, variables: dict[str, Any], max_chars: int) -> dict[str, str]:
    from jinja2 import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    try:
        out: list[str] = []
        size = 0
        for chunk in env.from_string(template).generate(**variables):
            size += len(chunk)
            if size > max_chars:
                return {"error": f"the chat template writes more than {max_chars} characters for one message"}
            out.append(chunk)
        return {"rendered": "".join(out)}
    except TemplateRaised as error:
        return {"error": f"the chat template raised: {error}"}
    except MemoryError:
        return {"error": f"the chat template needs more than {MEMORY_BYTES // 2**20} MiB of memory"}
    except RecursionError:
        return {"error": "the chat template recurses without end"}
    except (TemplateError, TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError,
            ArithmeticError) as error:
        return {"error": f"the chat template cannot be rendered: {type(error).__name__}: {error}"}


def main() -> None:
    request = json.loads(sys.stdin.read())
    limit_self()
    answer = render(request["template"], request["variables"], int(request["max_chars"]))
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
