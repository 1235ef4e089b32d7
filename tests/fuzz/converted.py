"""Hostile converted directories, seeded: damaged and re-sealed model files, damaged and hostile manifests.

:func:`hostile` makes the ``index``-th hostile copy of a converted directory
(the same (seed, index) gives the same copy): a model file mutated and its
size and digest re-sealed into the manifest (:mod:`tests.helpers.resealed`),
or the manifest made hostile (a wrong size, a missing or an extra file, a
path out of the directory, huge numbers, wrong types, damaged bytes).
:func:`outcome` loads one and calls it on the golden inputs:

- ``refused``: a jaxport error (typed) at load or at the call;
- ``same``: it ran and answered as the original (the damage did not matter);
- ``untyped:<type>``: another exception (a bug);
- ``wrong``: it ran and answered otherwise, though the directory has golden
  examples (a damaged file that runs: a bug);
- ``changed``: it ran and answered otherwise, and the directory has no golden
  examples: by design, verification cannot tell such a model from the
  original (it checks that every variant opens and answers, not what).

Run as ``python -m tests.fuzz.converted DIR WORK START COUNT SEED VERIFY EXAMPLES`` it prints
one outcome a line, so that a parent counts the deaths of the process too
(:func:`campaign_in_children`).
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tests.fuzz.mutations import mutate
from tests.helpers.resealed import manifest_path_of, rewrite

MANIFEST_KINDS = 12


def _manifest(root: Path) -> Path:
    where = manifest_path_of(root)
    assert where is not None, root
    return root / where


def model_files(root: Path) -> list[str]:
    """The model files of the directory (each variant's file)."""
    manifest = json.loads(_manifest(root).read_text())
    return sorted({v["file"] for f in manifest["functions"].values() for v in f["variants"]})


def hostile(source: Path, out: Path, seed: int, index: int, *, resealed_only: bool = False) -> str:
    """Writes the ``index``-th hostile copy of ``source`` at ``out``; what was done to it.

    Even indices (every index, ``resealed_only``) re-seal a mutated model file; odd ones make the manifest hostile.
    """
    rng = random.Random(seed * 1_000_003 + index)
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(source, out, symlinks=True)
    if resealed_only or index % 2 == 0:
        name = rng.choice(model_files(out))
        data = (out / name).read_bytes()
        rewrite(out, name, mutate(data, rng, data[::-1]))
        return f"resealed {name}"
    return _hostile_manifest(out, rng)


def _hostile_manifest(root: Path, rng: random.Random) -> str:
    path = _manifest(root)
    doc: dict[str, Any] = json.loads(path.read_text())
    files: dict[str, Any] = doc["files"]
    name = rng.choice(model_files(root))
    kind = rng.randrange(MANIFEST_KINDS)
    if kind == 0:
        files[name]["size"] += rng.choice((1, -1))
    elif kind == 1:
        (root / name).unlink()
    elif kind == 2:
        (root / "extra.bin").write_bytes(b"x")
    elif kind == 3:  # a path out of the directory, listed and sealed
        outside = rng.choice(("../outside.bin", "/etc/hostname", "a/../../outside.bin"))
        files[outside] = {"size": 1, "sha256": hashlib.sha256(b"x").hexdigest()}
        _first(doc)["variants"][0]["file"] = outside
    elif kind == 4:  # a model file that is a link out of the directory, re-sealed
        target = root.parent / f"{root.name}-outside.bin"
        target.write_bytes((root / name).read_bytes())
        (root / name).unlink()
        (root / name).symlink_to(target)
    elif kind == 5:
        files[name]["size"] = rng.choice((10**30, 2**63, -1, 2**64 + 1))
    elif kind == 6:  # huge dimensions
        huge = rng.choice((99999999999999999999, 4294967296, 0))
        for item in _first(doc)["signature"]["inputs"] + _first(doc)["signature"]["outputs"]:
            if item["shape"]:
                item["shape"][0], item["dims"][0] = str(huge), huge
    elif kind == 7:  # wrong types
        where, value = rng.choice([("size", "12"), ("size", 1.5), ("sha256", 7), ("size", None)])
        files[name][where] = value
    elif kind == 8:
        doc[rng.choice(("files", "functions", "target", "target_details"))] = rng.choice((7, "x", [], None, {}))
    elif kind == 9:  # a variant names another file of the directory, or the manifest
        _first(doc)["variants"][0]["file"] = rng.choice(sorted(files) + ["manifest.json"])
    elif kind == 10:  # nesting
        doc["target_details"] = "NESTED"
        path.write_text(json.dumps(doc).replace('"NESTED"', "[" * 100_000 + "]" * 100_000))
        return f"manifest kind {kind}"
    else:  # damaged bytes
        data = path.read_bytes()
        path.write_bytes(mutate(data, rng, data[::-1]))
        return f"manifest kind {kind}"
    path.write_text(json.dumps(doc))
    return f"manifest kind {kind}"


def _first(doc: dict[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = next(iter(doc["functions"].values()))
    return function


def outcome(root: Path, inputs: list[np.ndarray], reference: list[np.ndarray], *, verify: bool,
            examples: bool = True) -> str:
    """Loads ``root`` and calls its first function on ``inputs`` (see the module's text); a directory
    without golden examples (``examples`` False) that answers otherwise is ``changed``, not ``wrong``."""
    import jaxport
    from jaxport.errors import JaxportError

    try:
        model = jaxport.load_converted(root, verify=verify)
        results = model[next(iter(model))].run_flat(list(inputs))
    except JaxportError:
        return "refused"
    except Exception as exc:  # what the campaign looks for
        return f"untyped:{type(exc).__module__}.{type(exc).__name__}"
    same = len(results) == len(reference) and all(
        np.asarray(r).shape == w.shape and np.array_equal(np.asarray(r), w, equal_nan=True)
        for r, w in zip(results, reference))
    return "same" if same else "wrong" if examples else "changed"


def source_bundle(root: Path, *, examples: bool = True) -> Path:
    """Saves at ``root`` the bundle the campaign converts: one small MLP layer, with a golden example or none."""
    from tests.helpers.mlp_bundle import save_mlp_bundle

    return save_mlp_bundle(root, examples=examples)


def golden(root: Path) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The inputs of the bundle's golden example (:data:`~tests.helpers.mlp_bundle.X`) and the directory
    ``root``'s answer to them (with or without golden examples of its own)."""
    import jaxport
    from tests.helpers.mlp_bundle import X

    model = jaxport.load_converted(root, verify=False)
    inputs = [X]
    return inputs, [np.asarray(r) for r in model["predict"].run_flat(inputs)]


def campaign_in_children(source: Path, work: Path, count: int, seed: int, *, verify: bool, examples: bool = True,
                         timeout: float = 600.0) -> collections.Counter[str]:
    """The outcomes of ``count`` hostile copies, each loaded in a child that is restarted when one kills it
    (``died``). ``examples``: ``source`` has golden examples; without, every copy re-seals a mutated model
    file, and an answer that differs is ``changed``."""
    counts: collections.Counter[str] = collections.Counter()
    start = 0
    while start < count:
        done = subprocess.run([sys.executable, "-m", __name__, str(source), str(work), str(start), str(count),
                               str(seed), str(int(verify)), str(int(examples))], capture_output=True, text=True,
                              timeout=timeout, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("outcome ")]
        counts.update(line.split()[2] for line in lines)
        start += len(lines)
        if done.returncode != 0 and os.environ.get("JAXPORT_FUZZ_DEBUG"):
            print(f"died at {start} ({done.returncode}): {done.stderr[-600:]}", file=sys.stderr)
        if done.returncode != 0 and start < count:
            counts["died"] += 1
            start += 1
        elif done.returncode != 0:
            counts["died"] += 1
    return counts


def _main(argv: list[str]) -> None:
    source, work = Path(argv[0]), Path(argv[1])
    start, count, seed, verify, examples = int(argv[2]), int(argv[3]), int(argv[4]), argv[5] == "1", argv[6] == "1"
    inputs, reference = golden(source)
    for index in range(start, count):
        out = work / f"hostile-{index}"
        what = hostile(source, out, seed, index, resealed_only=not examples)
        found = outcome(out, inputs, reference, verify=verify, examples=examples)
        print(f"outcome {index} {found} {what}", flush=True)
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("JAXPORT_CACHE_DIR", "")
    _main(sys.argv[1:])
