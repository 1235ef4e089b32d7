"""What a fresh process loads to answer from a converted directory: ``load_converted`` and a first call.

A converted directory's first answer is measured against ``jax.export``'s
(benchmarks/fresh_process.py); what jaxport imports on that path is part of
it (each module's import costs a fresh process, a dataclass most: Python
compiles its generated methods). Loading an ONNX, LiteRT or IREE directory
of a symbolic function and calling it imports neither JAX nor jaxlib, nor
what only conversion or the JAX path needs: the targets' ports (the
conversion's records), another target's domain module (the registry names
each, imported on first use), the export and bundle services.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.domain.targets.registry import TARGETS

#: Modules (and packages, with every module under them) that loading and calling a converted directory
#: must not import.
NOT_LOADED = ("jax", "jaxlib", "jaxport.domain.targets.ports",
              "jaxport.domain.targets.savedmodel", "jaxport.domain.artifact.platforms",
              "jaxport.application.export", "jaxport.application.bundles",
              # conversion/ holds loading too (model, verification): its converting modules stay out.
              "jaxport.application.conversion.pipeline", "jaxport.application.conversion.source",
              "jaxport.application.conversion.quantized", "jaxport.application.conversion.targets",
              "jaxport.adapters.jax", "jaxport.adapters.mlir")

CHILD = """
import json, sys
import numpy as np
import jaxport
functions = jaxport.load_converted(sys.argv[1])
print(json.dumps(np.asarray(functions["f"](np.ones((3, 4), np.float32))).tolist()))
print(json.dumps(sorted(sys.modules)))
"""


def f(x: jax.Array) -> jax.Array:
    return jnp.sin(x).sum(axis=1) * 2.0


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    b, = jaxport.symbolic_shape("b")
    path = tmp_path_factory.mktemp("converted-load") / "f.jaxport"
    jaxport.save(jaxport.export(jax.jit(f))(jax.ShapeDtypeStruct((b, 4), jnp.float32)), path)
    return path


def _convert(target: str, source: Path, out: Path) -> None:
    missing = [m for m in TARGETS[target].loads if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{missing[0]} is not installed (pip install 'jaxport[{TARGETS[target].extra}]')")
    if target == "iree":
        jaxport.to_iree(source, out, dims={"f": [{"b": 3}]})
    else:
        jaxport.convert(source, out, to=target)


@pytest.mark.parametrize("target", ["onnx", "litert", "iree"])
def test_a_fresh_load_and_first_call_import_only_what_they_use(target: str, source: Path, tmp_path: Path) -> None:
    _convert(target, source, tmp_path / target)
    expected = (np.sin(np.ones((3, 4), np.float32)).sum(axis=1) * 2.0).tolist()
    for _ in range(2):  # the very first load (verdicts cold: a child verifies) and a later one (warm)
        out = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / target)], capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        answer, loaded = out.stdout.strip().splitlines()[-2:]
        np.testing.assert_allclose(json.loads(answer), expected, rtol=1e-5)
        modules = json.loads(loaded)
        unwanted = [m for m in modules if m in NOT_LOADED or m.startswith(tuple(p + "." for p in NOT_LOADED))]
        assert unwanted == [], unwanted
        others = [m for m in modules if m.startswith("jaxport.domain.targets.") and m.rsplit(".", 1)[1] in TARGETS]
        assert others == [f"jaxport.domain.targets.{target}"]  # its own target's module only
