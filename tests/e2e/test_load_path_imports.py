"""What a fresh process loads to answer from a bundle: ``load_bundle`` and a first call.

The JAX path's first answer is measured against ``jax.export``'s (benchmarks/fresh_process.py);
what jaxport imports on that path beyond JAX itself is part of it. A fresh process that loads a
bundle of a shape-polymorphic function and calls it does not import ``jax.extend`` (importing
any of its modules imports all of them, Pallas among them), the wrapper that only a module of the
dimension-argument form needs, nor ``importlib.metadata``'s reading of installed packages for the
verdict store's key (jaxlib's own version string is the same). Nor what only saving needs
(``application.bundles.save`` and the modules it alone imports), nor the export policy, nor
``Exported.warm``'s modules, nor what only a verification that runs needs (the verifying process's
module; the second load finds its verdict remembered).
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.application import wiring

#: Modules the load path must not import.
NOT_LOADED = ("jax.extend", "jaxport.adapters.mlir.wrap", "jaxport.application.bundles.save",
              "jaxport.adapters.jax.bundles.examples", "jaxport.domain.artifact.consumers",
              "jaxport.adapters.mlir.rewrite", "jaxport.domain.artifact.module_policy",
              "jaxport.adapters.jax.exported.warm")
#: ... nor, once its verdicts are remembered, these.
NOT_LOADED_WARM = ("jaxport.adapters.mlir.worker_main",)

CHILD = """
import json, sys
import numpy as np
import jaxport
x = np.ones((3, 4), np.float32)
if sys.argv[1].endswith(".jaxport"):  # an artifact, whose function takes the weights first
    answer = jaxport.load(sys.argv[1]).call({{"w": np.arange(4, dtype=np.float32)}}, x)
else:
    answer = jaxport.load_bundle(sys.argv[1])["predict"](x)
print(json.dumps(np.asarray(answer).tolist()))
print(sorted(m for m in sys.modules if m.startswith({prefixes!r})))
print(sorted(m for m in sys.modules if m.startswith({warm!r})))
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    b, = jaxport.symbolic_shape("b")
    params = {"w": np.arange(4, dtype=np.float32)}

    def predict(p: dict[str, jax.Array], x: jax.Array) -> jax.Array:
        return jnp.sin(x) @ p["w"]

    exp = jaxport.export(jax.jit(predict))({"w": jax.ShapeDtypeStruct((4,), jnp.float32)},
                                           jax.ShapeDtypeStruct((b, 4), jnp.float32))
    path = tmp_path_factory.mktemp("load-path") / "bundle"
    jaxport.save_bundle(path, {"predict": exp}, params)
    jaxport.save(exp, path.parent / "predict.jaxport")
    return path


@pytest.mark.parametrize("what", ["bundle", "artifact"])
def test_a_fresh_load_and_first_call_import_neither_jax_extend_nor_the_wrapper(bundle: Path, what: str) -> None:
    script = CHILD.format(prefixes=NOT_LOADED, warm=NOT_LOADED_WARM)
    path = bundle if what == "bundle" else bundle.parent / "predict.jaxport"
    for warm in (False, True):  # the very first load (verdicts cold) and a later one (warm)
        out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True,
                             check=True)
        answer, loaded, loaded_when_warm = out.stdout.strip().splitlines()[-3:]
        expected = (np.sin(np.ones((3, 4), np.float32)) @ np.arange(4, dtype=np.float32)).tolist()
        np.testing.assert_allclose(json.loads(answer), expected, rtol=1e-6)
        assert loaded == "[]", out.stdout + out.stderr
        assert loaded_when_warm == "[]" or not warm, out.stdout + out.stderr


def test_the_verdicts_parser_version_names_jaxlibs_installed_version() -> None:
    # The verdict store's keys stay those of earlier versions, which read importlib.metadata.
    stablehlo = wiring.stablehlo()
    assert stablehlo.parser_version() == (f"jaxlib {importlib.metadata.version('jaxlib')}, "
                                          f"StableHLO {stablehlo.newest_readable_version()}")
