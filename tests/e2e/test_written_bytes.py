"""End to end: every file jaxport writes, byte for byte, as recorded in tests/data/written_bytes.

An artifact, a bundle and the bundle converted to each target
(:mod:`tests.helpers.written_bytes`) are written again in a child process and
compared, file by file, with the sizes and SHA-256 digests of ``digests.json``;
a differing ``manifest.json`` is shown as a diff with its recorded text.
Only what varies from run to run is normalized, file by file
(:data:`tests.helpers.written_bytes.VARYING` says what and why).

A part is skipped when its extra is missing or when the software its bytes
depend on (Python's minor release, JAX, jaxlib, the target's converter) is
not the version the data was recorded with. A change that means to alter
what jaxport writes, jaxport's version included, records the data again
(``python -m tests.helpers.written_bytes --record``) in a commit of its own
that says why.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import written_bytes
from tests.helpers.written_bytes import DATA, PART_SOFTWARE, PARTS

#: The module each target's conversion needs (an extra of jaxport).
EXTRAS = {"onnx": "onnx", "onnx_web": "onnx", "litert": "litert_converter", "iree": "iree.compiler",
          "savedmodel": "tensorflow"}
RECORD = "python -m tests.helpers.written_bytes --record"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package is missing
        return False


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every part whose extra is installed, written once in a child process."""
    out = tmp_path_factory.mktemp("written_bytes") / "out"
    written_bytes.generate(out, tuple(p for p in PARTS if p not in EXTRAS or _installed(EXTRAS[p])))
    return out


def _recorded() -> tuple[dict[str, str], dict[str, Any]]:
    versions: dict[str, str] = json.loads((DATA / "versions.json").read_text())
    digests: dict[str, Any] = json.loads((DATA / "digests.json").read_text())
    return versions, digests


def _difference(name: str, content: bytes, recorded: dict[str, Any] | None) -> str | None:
    """What differs in the file ``name`` from its record, or None."""
    if recorded is None:
        return f"{name}: written, but not in the recorded data"
    now = written_bytes.digest(content)
    if now == recorded:
        return None
    message = (f"{name}: {now['size']} bytes, sha256 {now['sha256']}; "
               f"recorded {recorded['size']} bytes, sha256 {recorded['sha256']}")
    text = DATA / "manifests" / name
    if text.is_file():
        diff = difflib.unified_diff(text.read_text().splitlines(), content.decode().splitlines(),
                                    f"recorded {name}", f"written {name}", lineterm="")
        message += "\n" + "\n".join(diff)
    return message


@pytest.mark.parametrize("part", PARTS)
def test_each_file_is_written_byte_for_byte_as_recorded(part: str, written: Path) -> None:
    if part in EXTRAS:
        pytest.importorskip(EXTRAS[part], reason=f"the {part} target's extra is not installed")
    recorded_versions, digests = _recorded()
    versions: dict[str, str] = json.loads((written / "versions.json").read_text())
    assert versions["jaxport"] == recorded_versions["jaxport"], (
        f"jaxport {versions['jaxport']} writes its version in artifacts, ONNX models and manifests; the data "
        f"was recorded by jaxport {recorded_versions['jaxport']}: record it again ({RECORD}) in the "
        "version's commit")
    other = {s: (recorded_versions.get(s), versions[s]) for s in PART_SOFTWARE[part]
             if recorded_versions.get(s) != versions[s]}
    if other:
        pytest.skip(f"{part}'s bytes depend on versions other than those recorded: "
                    + ", ".join(f"{s} {now} (recorded: {then})" for s, (then, now) in sorted(other.items())))
    files = written_bytes.normalized(written, part)
    expected = sorted(n for n in digests if n.split("/", 1)[0] == part)
    differences = [d for name, content in files.items()
                   if (d := _difference(name, content, digests.get(name))) is not None]
    differences += [f"{name}: recorded, but not written" for name in expected if name not in files]
    if differences:
        pytest.fail(f"{len(differences)} of {part}'s files differ from tests/data/written_bytes (a change meant "
                    f"to alter them records the data again: {RECORD}):\n" + "\n".join(differences))
