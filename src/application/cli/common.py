"""What every subcommand shares: errors for the user, progress on a terminal, loading."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from jaxport.domain.errors import ArtifactError, JaxportError
from jaxport.domain.errors import UsageError as UsageError  # the subcommands import it from here

# `jaxport --help` loads none of what a command reads or runs (tests/unit/test_purity.py; figures:
# cli/main.py): the record's modules, NumPy and JAX are imported where used, and so is the symbolic
# layer (26 ms in a fresh process).
if TYPE_CHECKING:
    from jaxport.domain.specs import ArraySpec
    from jaxport.domain.artifact.record import ArtifactRecord
    from jaxport.adapters.jax.exported.exported import Exported


def is_users_error(exc: BaseException, *, fed_to_jax: bool = False) -> bool:
    """Whether ``exc`` is the user's to fix (one line, exit 2) rather than a bug in jaxport (70).

    The user's: jaxport's typed errors (:class:`~jaxport.errors.JaxportError`,
    :class:`~jaxport.errors.UsageError` included) and ``OSError`` (a file that
    is missing, unreadable or unwritable). When ``fed_to_jax`` (the command gave
    the user's program or arrays to JAX), also the built-in errors that JAX
    raises for what it cannot take: ``TypeError`` (a shape or dtype mistake in
    the program, a Python branch on a traced value, an array of strings),
    ``ValueError``, ``IndexError``, ``NotImplementedError`` (an operation with
    no lowering for a requested platform), JAX's ``InconclusiveDimensionOperation``
    and ``JaxRuntimeError`` (XLA refusing the program, as a custom call that
    this machine lacks; ``Exported.call`` raises it as ``ArtifactCallError``).
    """
    if isinstance(exc, (JaxportError, OSError)):
        return True
    if not fed_to_jax:
        return False
    jax_errors = sys.modules.get("jax.errors")  # JAX raised nothing if it was never loaded
    jax_own = () if jax_errors is None else (jax_errors.InconclusiveDimensionOperation,
                                               jax_errors.JaxRuntimeError)
    return isinstance(exc, (TypeError, ValueError, IndexError, NotImplementedError, *jax_own))


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line, for stderr (the traceback is for ``--debug``).

    Notes added to the exception (such as the constraint that would decide a
    clipped dimension) follow, one line each, as ``note: ...``.
    """
    text = " ".join(str(exc).split())
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.strerror}: {exc.filename}"
    line = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    # JAX notes that it filtered its frames from the traceback: not for a one-line error.
    notes = [" ".join(str(note).split()) for note in getattr(exc, "__notes__", ())
             if "JAX_TRACEBACK_FILTERING" not in str(note)]
    return "\n".join([line, *(f"note: {note}" for note in notes)])


def each_path(args: argparse.Namespace, paths: Sequence[str], run: Callable[[str], bool], *,
              caught: Callable[[BaseException], bool] = lambda exc: isinstance(exc, OSError)) -> int:
    """Runs ``run`` (which prints its verdict; True: passed) on each path; the exit status: 0 all
    pass, 1 some fail, 2 a path raised what ``caught`` accepts (said on stderr, the others still run)."""
    status = 0
    for path in paths:
        try:
            passed = run(path)
        except Exception as exc:
            if getattr(args, "debug", False) or not caught(exc):
                raise
            print(f"jaxport {args.command}: {one_line(exc)}", file=sys.stderr)
            status = 2
            continue
        if not passed and status == 0:
            status = 1
    return status


class Progress:
    """Prints the phases of a long command with the time since it started.

    Only when the stream is a terminal: in pipelines and CI logs the command
    stays quiet.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._enabled = self._stream.isatty()
        self._start = time.perf_counter()

    def say(self, text: str) -> None:
        """Prints ``[elapsed] text`` on a terminal."""
        if self._enabled:
            print(f"[{time.perf_counter() - self._start:6.2f}s] {text}", file=self._stream, flush=True)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Announces ``name`` before the block runs."""
        self.say(f"{name} ...")
        yield


def check_writable(path: str, *, directory_ok: bool = False) -> None:
    """Fails early, before any long work, when ``path`` cannot be written.

    Raises:
        UsageError: ``path`` is a directory (unless ``directory_ok``: a bundle
            replaces one) or its parent directory does not exist.
    """
    if os.path.isdir(path) and not directory_ok:
        raise UsageError(f"{path} is a directory; give a file name")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise UsageError(f"cannot write {path}: directory {parent} does not exist")


def load_artifact(path: str, *, allowed_custom_calls: Sequence[str] = ()) -> Exported:
    """The artifact at ``path``, verified as :func:`jaxport.load` does.

    Raises:
        UsageError: ``path`` is a directory.
        ArtifactError: the bytes are not an artifact or fail verification
            (the message names ``path``).
        OSError: the file cannot be read.
    """
    blob = _read_bytes(path)
    _decode(path, blob)  # bad bytes fail here, before JAX loads
    from jaxport.application.export.serialization import deserialize

    try:
        return deserialize(blob, verify=True, allowed_custom_calls=allowed_custom_calls)
    except ArtifactError as exc:
        raise ArtifactError(f"{path}: {exc}") from exc


def pick(functions: Mapping[str, Any], name: str | None, what: str) -> Any:
    """The function ``name`` of ``functions`` (the only one when ``name`` is None).

    Raises:
        UsageError: there is no such function, or several and none is named.
    """
    if name is None:
        if len(functions) != 1:
            raise UsageError(f"{what} has functions {', '.join(functions)}: name one")
        name = next(iter(functions))
    if name not in functions:
        raise UsageError(f"{what} has no function {name!r} (it has {', '.join(sorted(functions))})")
    return functions[name]


def read_artifact(path: str) -> ArtifactRecord:
    """The decoded record of the file at ``path``, without JAX.

    Raises:
        UsageError: ``path`` is a directory.
        ArtifactError: the bytes are not an artifact (the message names ``path``).
        OSError: the file cannot be read.
    """
    return _decode(path, _read_bytes(path))


def read_artifact_and_trailer(path: str) -> tuple[ArtifactRecord, bool]:
    """:func:`read_artifact`, and whether the file ends with the jaxport trailer.

    Raises:
        UsageError, ArtifactError, OSError: as :func:`read_artifact`.
    """
    from jaxport.domain.artifact.integrity import is_sealed  # 5 ms on --help

    blob = _read_bytes(path)
    return _decode(path, blob), is_sealed(blob)


def _read_bytes(path: str) -> bytes:
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory, not an artifact file")
    with open(path, "rb") as file:
        return file.read()


def _decode(path: str, blob: bytes) -> ArtifactRecord:
    from jaxport.adapters.flatbuffers.codec import decode_artifact

    try:
        return decode_artifact(blob)
    except ArtifactError as exc:
        raise ArtifactError(f"{path} is not a valid artifact: {exc}") from exc


def print_results(leaves: list[tuple[str, Any]]) -> None:
    """Prints one line per result leaf: its key path (``['y']``), dtype, shape and values."""
    from jaxport.adapters.storage.array_files import array_summary

    for path, leaf in leaves:
        print(f"result{path}: {array_summary(leaf)}")
