"""An engine's errors as jaxport's: the one translation that every runtime adapter applies.

LiteRT's, IREE's and TensorFlow's bindings raise builtin types, or their own
with no common base, for whatever fails. Inside :func:`engine_errors`, a
failure while a function runs becomes an ``ArtifactCallError`` naming the
function, one while a model is opened becomes what the adapter makes of it
(an ``ArtifactError`` naming the file), and jaxport's own errors pass through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from jaxport.domain.errors import ArtifactCallError, JaxportError


@contextmanager
def engine_errors(function: str | None, opening: Callable[[Exception], Exception]) -> Iterator[None]:
    """Translates the engine's errors raised inside the block, the engine's words kept.

    Args:
        function: the function being called; None while a model is opened or read.
        opening: the error to raise for ``exc``, raised while a model is opened.

    Raises:
        ArtifactCallError: calling ``function`` failed.
        Exception: ``opening(exc)``, when ``function`` is None.
    """
    try:
        yield
    except JaxportError:
        raise
    except Exception as exc:  # the engines' bindings raise types with no common base
        if function is not None:
            raise ArtifactCallError(function, exc) from exc
        raise opening(exc) from exc
