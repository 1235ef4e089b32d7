"""What differs between jaxport and the installed JAX, said by kind: ``make test-newest-jax``'s report.

``python -m tests.helpers.newest_jax [JUNIT_XML...]`` runs in a venv holding
whatever JAX the registry offers (``JAXPORT_ALLOW_UNTESTED_JAX=1`` lets jaxport
run outside its tested range there) and prints, one line each:

* **the range**: the installed jax and jaxlib, and whether they are of the
  range jaxport is tested on;
* **a changed internal**: a module of ``jaxport.adapters.jax`` that does not
  import (the ``ImportError`` or ``AttributeError`` names what JAX moved), or
  an export and call of a small function that fails;
* **a format version**: the ``serialization_version`` and ``jax_version`` that
  ``jax.export`` writes against what jaxport writes, whether jaxport reads
  ``jax.export``'s bytes and ``jax.export`` reads jaxport's, and whether the
  bytes are the same;
* **an allowlist entry**: the custom-call targets ``jax.export`` guarantees
  stable that jaxport does not, and the other way;
* **a failed test**: each failure or error of the JUnit XML files given (the
  pytest runs of the interop and conformance tests), with the first line of
  its message; of JAX's own suites, those that fail through jaxport and not
  through ``jax.export`` (each file's counts are printed first).

It exits with 1 when anything but the range differs, else 0.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
import sys
import traceback
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Difference:
    """One thing that differs: its kind (``a format version``, ...) and what was found."""

    kind: str
    text: str


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"


def range_differences() -> Iterator[Difference]:
    """The installed jax and jaxlib, where they are outside the range jaxport is tested on."""
    from jaxport.adapters.jax import installed

    for name in ("jax", "jaxlib"):
        version = importlib.metadata.version(name)
        if not installed._OLDEST <= installed.release(version) < installed._FIRST_UNTESTED:
            yield Difference("the range", f"{name} {version} is outside the tested range {name}{installed.TESTED_RANGE}")


def internal_differences() -> Iterator[Difference]:
    """The modules of ``jaxport.adapters.jax`` that do not import, each with the error that names what moved."""
    package = importlib.import_module("jaxport.adapters.jax")
    for info in sorted(pkgutil.walk_packages(package.__path__, "jaxport.adapters.jax."), key=lambda i: i.name):
        try:
            importlib.import_module(info.name)
        except (ImportError, AttributeError) as exc:
            yield Difference("a changed internal", f"{info.name} does not import: {_first_line(exc)}")


def format_differences() -> Iterator[Difference]:
    """``jax.export``'s bytes against jaxport's for one small function, read both ways."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxport
    from jaxport.adapters.flatbuffers.codec import decode_artifact

    def f(x: Any) -> jax.Array:
        return jnp.sin(x) * 2

    spec = jax.ShapeDtypeStruct((3,), np.float32)
    x = np.linspace(0, 1, 3, dtype=np.float32)
    try:
        theirs = bytes(jax.export.export(jax.jit(f))(spec).serialize())
        ours = bytes(jaxport.export(jax.jit(f))(spec).serialize(integrity=False))
    except Exception as exc:  # noqa: BLE001 - the report says what any failure was
        yield Difference("a changed internal", f"exporting jnp.sin with both fails: {_first_line(exc)}")
        traceback.print_exc()
        return
    versions = {}
    for who, blob in (("jax.export", theirs), ("jaxport", ours)):
        try:
            record = decode_artifact(blob)
        except Exception as exc:  # noqa: BLE001
            yield Difference("a format version", f"jaxport's codec does not read what {who} writes: {_first_line(exc)}")
            continue
        versions[who] = (record.serialization_version, record.jax_version)
    if len(set(versions.values())) > 1:
        yield Difference("a format version", "serialization_version, jax_version: " + ", ".join(
            f"{who} writes {v}" for who, v in versions.items()))
    for who, read in (("jaxport", lambda: jaxport.deserialize(theirs).call(x)),
                      ("jax.export", lambda: jax.export.deserialize(bytearray(ours)).call(x))):
        yield from _reads(who, read, f(x))
    if theirs != ours:
        at = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b), min(len(theirs), len(ours)))
        yield Difference("a format version", f"the bytes differ (first at offset {at} of {len(theirs)} and "
                                             f"{len(ours)}): jaxport does not write what jax.export writes")


def _reads(who: str, read: Callable[[], object], want: object) -> Iterator[Difference]:
    import numpy as np

    try:
        got = read()
    except Exception as exc:  # noqa: BLE001
        yield Difference("a format version", f"{who} does not read and call the other's bytes: {_first_line(exc)}")
        return
    if not np.allclose(np.asarray(got), np.asarray(want)):
        yield Difference("a format version", f"{who} reads the other's bytes but calls them wrong")


def allowlist_differences() -> Iterator[Difference]:
    """The custom-call targets guaranteed stable by one of ``jax.export`` and jaxport and not the other."""
    from jaxport.domain.artifact.custom_calls import GUARANTEED_STABLE_TARGETS

    try:
        # What: jax.export's allowlist of custom calls. Why internal: JAX publishes no list of them.
        from jax._src.export import _export
        theirs = set(_export._CUSTOM_CALL_TARGETS_GUARANTEED_STABLE)
    except (ImportError, AttributeError) as exc:
        yield Difference("a changed internal", f"jax.export's allowlist is not where it was: {_first_line(exc)}")
        return
    for target in sorted(theirs - GUARANTEED_STABLE_TARGETS):
        yield Difference("an allowlist entry", f"{target}: guaranteed stable by jax.export, not by jaxport")
    for target in sorted(GUARANTEED_STABLE_TARGETS - theirs):
        yield Difference("an allowlist entry", f"{target}: guaranteed stable by jaxport, not by jax.export")


def _outcomes(path: Path) -> dict[str, tuple[str, str]]:
    """Each test of a JUnit XML file: ``passed``, ``skipped``, ``failed`` or ``error``, and the message's first line."""
    outcomes = {}
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for kind in ("failure", "error", "skipped"):
            found = case.find(kind)
            if found is not None:
                outcome = {"failure": "failed"}.get(kind, kind)
                lines = (found.get("message") or found.text or "").strip().splitlines()
                message = lines[0] if lines else kind
                break
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = (outcome, message)
    return outcomes


def counts(path: Path) -> str:
    """``passed/failed/skipped`` of a JUnit XML file (errors count as failed)."""
    values = [o for o, _ in _outcomes(path).values()]
    return (f"{values.count('passed')} passed, {values.count('failed') + values.count('error')} failed, "
            f"{values.count('skipped')} skipped")


def failed_tests(paths: Sequence[Path]) -> Iterator[Difference]:
    """Each failure or error of the JUnit XML files ``paths``, with the first line of its message.

    A file ``NAME.jaxport.xml`` (JAX's suite run through jaxport) beside ``NAME.jax.export.xml`` (the same
    suite run unchanged) counts only the tests that fail through jaxport and not through jax.export.
    """
    for path in paths:
        if not path.exists():
            yield Difference("a failed test", f"{path}: no results (the run did not finish)")
            continue
        if path.name.endswith(".jax.export.xml"):
            continue
        outcomes = _outcomes(path)
        peer = path.with_name(path.name.removesuffix(".jaxport.xml") + ".jax.export.xml")
        theirs = _outcomes(peer) if path.name.endswith(".jaxport.xml") and peer.exists() else {}
        for name, (outcome, message) in outcomes.items():
            if outcome in ("failed", "error") and theirs.get(name, ("passed", ""))[0] not in ("failed", "error"):
                also = " (passes through jax.export)" if theirs else ""
                yield Difference("a failed test", f"{path.stem}: {name}{also}: {message}"[:400])


def main(argv: Sequence[str]) -> int:
    print(f"jax {importlib.metadata.version('jax')}, jaxlib {importlib.metadata.version('jaxlib')} "
          f"(python {sys.version.split()[0]})")
    found = [*range_differences(), *internal_differences()]
    if not any(d.kind == "a changed internal" for d in found):
        found += [*format_differences(), *allowlist_differences()]
    paths = [Path(a) for a in argv]
    for path in paths:
        if path.exists():
            print(f"{path.stem}: {counts(path)}")
    found += failed_tests(paths)
    for d in found:
        print(f"DIFFERS ({d.kind}): {d.text}")
    if not found:
        print("nothing differs: jaxport and jax.export agree on this JAX")
    return 1 if [d for d in found if d.kind != "the range"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
