"""The rendering process: compiles and renders a bundle's chat template under limits, for its parent.

Run as ``python -m jaxport.adapters.jinja.render_main AS_BYTES CPU_SECONDS`` by
:class:`~jaxport.adapters.jinja.chat.TemplateChildren`, an isolated child
(:mod:`jaxport.adapters.isolated`: its address space capped, no core dumps,
JSON lines). Each request first limits the process (its CPU time; its address
space to what is in use plus the request's ``memory``), then answers:

* ``{"ping": true}``: ``{"ready": true}`` once Jinja2 is imported;
* ``{"template": T, "compile": true}``: ``{"ok": true}``, or ``{"error": message}`` where it does not compile;
* ``{"template": T, "messages": [...], "add_generation_prompt": bool, "variables": {...}, "most": N}``:
  ``{"text": prompt}``, or ``{"refused": message}`` (the template's ``raise_exception``), ``{"error": message}``
  (it failed), ``{"memory": true}`` (it needed more than its memory), ``{"too_long": true}`` (it wrote more
  than ``N`` characters: rendering stops there).

Compiled templates are kept by their text (the last few). The environment is
Hugging Face's: ``ImmutableSandboxedEnvironment`` with ``trim_blocks`` and
``lstrip_blocks``, ``raise_exception(message)``; every arithmetic operator is
intercepted, so that compiling never evaluates an expression (Jinja folds
constants otherwise: ``{{ "x" * 2000000000 }}`` would allocate at compile).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, NoReturn

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from jaxport.adapters.isolated.child import Request, serve


class _Refused(Exception):
    """What the template's ``raise_exception`` raises."""


def _raise_exception(message: str) -> NoReturn:
    raise _Refused(message)


class _Environment(ImmutableSandboxedEnvironment):
    """Hugging Face's environment; operators evaluated when rendered only (none folded at compile)."""

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    intercepted_unops = frozenset({"+", "-"})


_ENVIRONMENT = _Environment(trim_blocks=True, lstrip_blocks=True)
_ENVIRONMENT.globals["raise_exception"] = _raise_exception


@functools.lru_cache(maxsize=8)
def _compiled(template: str) -> jinja2.Template:
    return _ENVIRONMENT.from_string(template)


def _handle(request: Request) -> None:
    header = request.header
    request.limit(int(header.get("memory", 0)) or None)
    if header.get("ping"):
        request.say({"ready": True})
        return
    try:
        template = _compiled(str(header["template"]))
        if header.get("compile"):
            request.say({"ok": True})
            return
        most, written, pieces = int(header["most"]), 0, []
        for piece in template.generate(messages=header["messages"],
                                       add_generation_prompt=bool(header["add_generation_prompt"]),
                                       **header["variables"]):
            written += len(piece)
            if written > most:
                request.say({"too_long": True})
                return
            pieces.append(piece)
        text = "".join(pieces)
    except MemoryError:
        pieces = []
        request.say({"memory": True})
        return
    except _Refused as exc:
        request.say({"refused": str(exc)[:2000]})
        return
    except jinja2.TemplateSyntaxError as exc:
        request.say({"error": f"line {exc.lineno}: {exc}"[:2000]})
        return
    except Exception as exc:  # noqa: BLE001 - whatever the template raised, said to the parent
        request.say({"error": f"{type(exc).__name__}: {exc}"[:2000]})
        return
    request.say({"text": text})


def main(argv: list[str]) -> int:
    """Serves the parent until its input closes."""
    return serve(_handle, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
