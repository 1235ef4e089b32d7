"""JAX's CPU LAPACK targets are registered for a call of a module that uses them, and only then.

Registering them imports SciPy's linalg, which costs a fresh process's first
answer about 0.2 s; a module with symbolic shapes has custom calls too (its
shape assertions) but needs none of them. (Nothing here may hold the word
``lapack_``: the modules' locations keep the file and function names.)
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

CHILD = """
import sys
import numpy as np
import jaxport
exp = jaxport.load(sys.argv[1])
x = np.eye(3, dtype=np.float32) * 4
print(np.asarray(exp.call(x)).tolist())
print("scipy.linalg" in sys.modules)
"""


@pytest.mark.parametrize("name, fun, lapack", [
    ("cholesky", jnp.linalg.cholesky, True),
    ("tanh", jnp.tanh, False),
])
def test_a_fresh_process_registers_the_linalg_targets_only_for_a_module_that_calls_them(
        tmp_path: Path, name: str, fun: Callable[..., Any], lapack: bool) -> None:
    n, = jaxport.symbolic_shape("n")
    exported = jaxport.export(jax.jit(fun))(jax.ShapeDtypeStruct((n, n), jnp.float32))
    assert (b"lapack_" in exported.mlir_module_serialized) == lapack
    path = tmp_path / f"{name}.jaxport"
    jaxport.save(exported, path)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result, imported = done.stdout.split("\n")[:2]
    x = np.eye(3, dtype=np.float32) * 4
    np.testing.assert_allclose(np.asarray(eval(result), np.float32), np.asarray(fun(x)), rtol=1e-6)
    assert imported == str(lapack)
