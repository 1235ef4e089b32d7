"""Chat templates (as ``tokenizer_config.json`` holds them) compiled and rendered in isolated, limited
processes with Jinja2's sandbox (the ``jaxport[text]`` extra).

A bundle's template is code from whoever wrote the bundle. Jinja2's sandbox
restricts what it may touch, not how long it runs or how much it asks for
(``{% for i in range(99999) %}{% for j in range(99999) %}x...`` runs for hours,
``{{ "x" * 2000000000 }}`` asks for 2 GB), and an environment that counted loop
iterations and string sizes would have to bound every filter and operator
Jinja has (``center``, ``indent``, ``replace``, ``format``, ``*`` on lists...)
and could still not stop a step that runs long. So the template never runs in
this process: it is compiled and rendered in a child (:mod:`.render_main`,
:mod:`jaxport.adapters.isolated`) whose address space is capped, whose every
render may use :data:`DEFAULT_RENDER_MEMORY` more and at most
:data:`DEFAULT_RENDER_SECONDS` (a deadline the parent enforces by killing it;
its CPU time is limited too), and whose output stops at
:data:`DEFAULT_RENDER_CHARS` characters. A child that ran past a bound is
killed and replaced; the caller gets a :class:`GenerationError` naming the
template's bundle and the bound. A few children render at once
(:data:`CHILDREN`), each started on first use and kept for later renders.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final

from jaxport.adapters.isolated.parent import Child, ChildDied, env_limit
from jaxport.domain.errors import GenerationError, GenerationSpecError, MissingExtraError

_MAIN: Final = f"{__package__}.render_main"
#: How long one render may take, in wall seconds (``JAXPORT_TEMPLATE_SECONDS``).
DEFAULT_RENDER_SECONDS: Final = 5.0
#: The memory a render may add, in bytes (``JAXPORT_TEMPLATE_MEMORY_MIB``: in MiB).
DEFAULT_RENDER_MEMORY: Final = 256 << 20
#: The most characters a render may write (``JAXPORT_TEMPLATE_CHARS``).
DEFAULT_RENDER_CHARS: Final = 4 << 20
#: The rendering process's address space (a hard cap).
ADDRESS_SPACE: Final = 4 << 30
#: How long a new child may take to start (import Jinja2) before its first request.
STARTUP_SECONDS: Final = 60.0
#: The most children that render at once.
CHILDREN: Final = 4


class TemplateChildren:
    """The rendering processes: up to ``most`` at once, each kept for later requests, replaced when one dies.

    Args:
        seconds, memory, chars: each render's bounds (wall seconds, bytes it may add, characters it writes).
        most: the most children at once (more callers wait for one).
    """

    def __init__(self, *, seconds: float = DEFAULT_RENDER_SECONDS, memory: int = DEFAULT_RENDER_MEMORY,
                 chars: int = DEFAULT_RENDER_CHARS, most: int = CHILDREN) -> None:
        self.seconds, self.memory, self.chars = seconds, memory, chars
        self._idle: list[Child] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(most)
        atexit.register(self.close)

    def ask(self, header: Mapping[str, Any]) -> dict[str, Any]:
        """The answer of a child to ``header`` (with this object's memory and character bounds).

        Raises:
            ChildDied: the child stopped before it answered (killed at the deadline too); it is not kept.
        """
        with self._child() as child:
            with child.watch(time.monotonic() + self.seconds):
                child.send(dict(header, memory=self.memory, most=self.chars))
                answer, _ = child.receive(0)
            return answer

    @contextmanager
    def _child(self) -> Iterator[Child]:
        """A started child, kept for later requests unless the caller's request raised (it is dead then)."""
        with self._slots:
            with self._lock:
                child = self._idle.pop() if self._idle else None
            if child is None or child.pid is None:
                child = Child(_MAIN, address_space=ADDRESS_SPACE, cpu_seconds=int(self.seconds) + 1)
                with child.watch(time.monotonic() + STARTUP_SECONDS):
                    child.send({"ping": True})
                    child.receive(0)
            try:
                yield child
            except BaseException:
                child.close()  # dead already after ChildDied; ended otherwise
                raise
            with self._lock:
                self._idle.append(child)

    def close(self) -> None:
        """Ends the idle children (they exit when their input closes)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for child in idle:
            child.close()


_shared: list[TemplateChildren] = []
_shared_lock = threading.Lock()


def shared_children() -> TemplateChildren:
    """The process's rendering processes, with the bounds that ``JAXPORT_TEMPLATE_SECONDS``,
    ``JAXPORT_TEMPLATE_MEMORY_MIB`` and ``JAXPORT_TEMPLATE_CHARS`` set (read on first use)."""
    with _shared_lock:
        if not _shared:
            _shared.append(TemplateChildren(
                seconds=env_limit("JAXPORT_TEMPLATE_SECONDS", DEFAULT_RENDER_SECONDS),
                memory=int(env_limit("JAXPORT_TEMPLATE_MEMORY_MIB", DEFAULT_RENDER_MEMORY >> 20)) << 20,
                chars=int(env_limit("JAXPORT_TEMPLATE_CHARS", DEFAULT_RENDER_CHARS))))
        return _shared[0]


class JinjaChatTemplate:
    """One chat template, compiled in a rendering process (it is refused there if it does not compile).

    Args:
        template: the template's text.
        where: what it is, for messages (``the chat template of gpt/``).
        children: the rendering processes (default: the process's, :func:`shared_children`).

    Raises:
        GenerationSpecError: naming ``where``: the template does not compile, or compiling it ran past a bound.
        MissingExtraError: Jinja2 (the ``jaxport[text]`` extra) is not installed.
    """

    def __init__(self, template: str, where: str = "the chat template",
                 children: TemplateChildren | None = None) -> None:
        if importlib.util.find_spec("jinja2") is None:
            raise MissingExtraError("Jinja2", "text")
        self._template, self.where = template, where
        self._children = children or shared_children()
        try:
            answer = self._children.ask({"template": template, "compile": True})
        except ChildDied as died:
            raise GenerationSpecError(where, f"compiling it {self._past(died)}") from None
        if "error" in answer:
            raise GenerationSpecError(where, f"it does not parse: {answer['error']}")

    def render(self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool = True,
               **variables: Any) -> str:
        """The prompt text of ``messages`` (``[{"role": "user", "content": "..."}]``), rendered under the bounds.

        Raises:
            GenerationError: the template refused the messages, failed to render them, or ran past a bound
                (its time, its memory, its output's length: the message names the bound and ``where``).
        """
        header = {"template": self._template, "messages": list(messages),
                  "add_generation_prompt": add_generation_prompt, "variables": variables}
        try:
            json.dumps(header)
        except (TypeError, ValueError) as exc:
            raise GenerationError("messages", f"{self.where} takes only JSON values: {exc}") from exc
        try:
            answer = self._children.ask(header)
        except ChildDied as died:
            raise GenerationError("messages", f"{self.where} {self._past(died)}: refused") from None
        if "text" in answer:
            return str(answer["text"])
        if "refused" in answer:
            raise GenerationError("messages", f"the chat template refused them: {answer['refused']}")
        if answer.get("memory"):
            raise GenerationError("messages", f"{self.where} needs more than its bound of "
                                              f"{self._children.memory >> 20} MiB to render them "
                                              "(JAXPORT_TEMPLATE_MEMORY_MIB): refused")
        if answer.get("too_long"):
            raise GenerationError("messages", f"{self.where} writes more than its bound of "
                                              f"{self._children.chars} characters for them "
                                              "(JAXPORT_TEMPLATE_CHARS): refused")
        raise GenerationError("messages", f"the chat template failed to render them: {answer.get('error')}")

    def _past(self, died: ChildDied) -> str:
        if died.timed_out:
            return (f"did not finish within its bound of {self._children.seconds:g} s "
                    "(JAXPORT_TEMPLATE_SECONDS)")
        return f"stopped its rendering process ({died.how}; the bounds: {self._children.seconds:g} s, " \
               f"{self._children.memory >> 20} MiB)"
