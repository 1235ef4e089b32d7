"""Whether JAX is installed here, in the release range jaxport is tested on: the one check.

JAX is the extra ``jax`` (``pip install 'jaxport[jax]'``): a process that only
runs converted directories installs none. Everything that needs JAX (exporting,
calling, differentiating or converting an artifact, bundles, serving a bundle)
asks :func:`require_jax` before it imports JAX, so that a missing JAX, or one
outside the range, is a :class:`MissingExtraError` that says so, not a
``ModuleNotFoundError`` or an ``AttributeError`` from deep inside. This module
imports no JAX: it reads the installed distributions' versions.

The one way past the range is explicit and never on by default: the
environment variable ``JAXPORT_ALLOW_UNTESTED_JAX=1`` (:data:`ALLOW_UNTESTED`)
lets jaxport run on a release outside it, as ``make test-newest-jax`` does to
try the newest JAX before it joins the range. A name that release lacks then
surfaces as the ``AttributeError`` or ``ImportError`` that names it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os

from jaxport.domain.errors import MissingExtraError

#: The releases of jax and jaxlib the test suite has run against, as pyproject.toml's extra ``jax`` names them.
TESTED_RANGE = ">=0.10.2,<0.12.2"
_OLDEST = (0, 10, 2)
_FIRST_UNTESTED = (0, 12, 2)
#: The environment variable that, set to ``1``, lets jaxport run on a JAX or jaxlib outside :data:`TESTED_RANGE`.
ALLOW_UNTESTED = "JAXPORT_ALLOW_UNTESTED_JAX"
#: The distributions the range applies to.
_DISTRIBUTIONS = ("jax", "jaxlib")


def require_jax() -> None:
    """Returns when JAX and jaxlib are installed and of :data:`TESTED_RANGE` (or outside it, with
    :data:`ALLOW_UNTESTED` set to ``1``).

    Raises:
        MissingExtraError: either is missing, or a release outside the range
            (the message names the installed version and the range).
    """
    problem = _problem()
    if problem is not None:
        what, state = problem
        raise MissingExtraError(what, "jax", state=state)


def as_missing_jax(exc: BaseException) -> MissingExtraError | None:
    """The :class:`MissingExtraError` that ``exc`` (raised while importing or using JAX) stands for, or None.

    A ``ModuleNotFoundError`` of jax or jaxlib, or an ``ImportError`` or
    ``AttributeError`` while the installed JAX is outside :data:`TESTED_RANGE`
    (a name that release lacks), is JAX's absence or release; anything else is not.
    """
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").partition(".")[0] not in _DISTRIBUTIONS:
        return None
    if not isinstance(exc, (ImportError, AttributeError)):
        return None
    problem = _problem()
    if problem is None:
        return None
    what, state = problem
    error = MissingExtraError(what, "jax", state=state)
    error.__cause__ = exc
    return error


@functools.cache
def _problem() -> tuple[str, str] | None:
    """What is wrong (``what``, ``state`` of the error), found once per process."""
    for name in _DISTRIBUTIONS:
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            if importlib.util.find_spec(name) is None:
                return f"JAX ({name})", "is not installed"
            continue  # importable without distribution metadata (a source tree): trust it
        if not _OLDEST <= release(version) < _FIRST_UNTESTED and os.environ.get(ALLOW_UNTESTED) != "1":
            return (f"{name} {version}",
                    f"is installed, outside the range jaxport is tested on ({name}{TESTED_RANGE})")
    return None


def release(version: str) -> tuple[int, ...]:
    """``(0, 12, 1)`` of ``"0.12.1"``, ``"0.12.1.dev20260101"`` or ``"0.12.1rc1"``."""
    parts: list[int] = []
    for part in version.split(".")[:3]:
        digits = ""
        for char in part:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)
