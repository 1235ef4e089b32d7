"""Chat templates (as ``tokenizer_config.json`` holds them) rendered with Jinja2's sandbox (the ``jaxport[text]`` extra).

The environment is Hugging Face's: ``ImmutableSandboxedEnvironment`` with
``trim_blocks`` and ``lstrip_blocks``, and the template may call
``raise_exception(message)`` to refuse a conversation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from jaxport.domain.errors import GenerationError, GenerationSpecError, MissingExtraError

try:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("Jinja2", "text", exc) from exc


class _Refused(Exception):
    """What the template's ``raise_exception`` raises."""


def _raise_exception(message: str) -> NoReturn:
    raise _Refused(message)


class JinjaChatTemplate:
    """One chat template, parsed once.

    Raises:
        GenerationSpecError: the template does not parse (the message says where).
    """

    def __init__(self, template: str) -> None:
        environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        environment.globals["raise_exception"] = _raise_exception
        try:
            self._template = environment.from_string(template)
        except jinja2.TemplateSyntaxError as exc:
            raise GenerationSpecError("the chat template", f"it does not parse: line {exc.lineno}: {exc}") from exc

    def render(self, messages: Sequence[Mapping[str, Any]], *, add_generation_prompt: bool = True,
               **variables: Any) -> str:
        """The prompt text of ``messages`` (``[{"role": "user", "content": "..."}]``).

        Raises:
            GenerationError: the template refused the messages or failed to render them.
        """
        try:
            return str(self._template.render(messages=list(messages), add_generation_prompt=add_generation_prompt,
                                             **variables))
        except _Refused as exc:
            raise GenerationError("messages", f"the chat template refused them: {exc}") from exc
        except (jinja2.TemplateError, TypeError, ValueError, KeyError, IndexError) as exc:
            raise GenerationError("messages", f"the chat template failed to render them: "
                                              f"{type(exc).__name__}: {exc}") from exc
