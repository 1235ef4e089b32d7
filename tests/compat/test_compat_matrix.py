"""The compatibility matrix: older JAX releases read jaxport's artifacts, and jaxport reads theirs.

Each release runs in a virtual environment of its own under ``build/compat``
(see :mod:`tests.helpers.compat_venvs`: made on first use, then reused). In
that environment ``jax.export.deserialize`` reads and calls artifacts that
jaxport wrote (sealed and unsealed, with a symbolic dimension, an
``OrderedDict`` argument as Flax and Equinox weights become, and a VJP it
differentiates through), or, where ``jaxport check --consumer`` says that
release's jaxlib reads no StableHLO as new as the module's (JAX 0.10.2 and
older, for an artifact exported on JAX 0.11.2 or 0.12), refuses them while
deserializing; every release reads, calls and differentiates the artifact
written for it (``jaxport.save(..., consumer="jax==VERSION")``, its modules for
the release's StableHLO), whichever JAX wrote it; and that release's ``jax.export`` writes artifacts
(with ``vjp_order=1``) that jaxport, in this process, reads, calls and
differentiates. The JAX of this process runs the same script as the release
``"current"`` (JAX 0.12.1 where the range's newest is installed). Where this
JAX lowers lgamma and digamma to custom calls (0.12.1, past its
forward-compatibility gate), the artifact that calls them is run by every
release too: ``check --consumer`` says "no" exactly where the release fails to
run it, and ``consumer=`` refuses to write it for such a release.
``pytest -m "not compat_matrix"`` leaves these tests out.
"""

from __future__ import annotations

import collections
import json
import os
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
from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.domain.artifact.consumers import find_consumer, verdict
from jaxport.errors import ConsumerMismatchError
from tests.helpers.compat_venvs import VERSIONS, venv_python
from tests.helpers.consumer_exports import NEWEST_JAX, fused_multiply_add, special, special_functions

pytestmark = pytest.mark.compat_matrix


def f(params: Any, x: Any) -> jax.Array:
    return jnp.tanh(x @ params["weight"] + params["bias"]).sum(axis=-1)


PARAMS = collections.OrderedDict(weight=np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4),
                                 bias=np.linspace(0, 1, 4, dtype=np.float32))
X = np.linspace(-2, 2, 15, dtype=np.float32).reshape(5, 3)
#: The releases whose readers run the artifacts: the compat venvs' and this process's JAX.
RELEASES = (*VERSIONS, "current")
SPECIAL_X = np.array([0.5, 1.5, 2.5], np.float32)

# Run by the older release's Python; imports neither jaxport nor anything of this repository.
OLD_RELEASE = r"""
import collections, json, sys
from pathlib import Path
import numpy as np
import jax, jax.numpy as jnp
from jax import export

work = Path(sys.argv[1])
params = collections.OrderedDict((k, jnp.asarray(v)) for k, v in np.load(work / "params.npz").items())
x = jnp.asarray(np.load(work / "x.npy"))
out = {"jax": jax.__version__, "read": {}}
for name in ("sealed.jaxport", "unsealed.jaxport", "consumer.jaxport"):
    try:
        exp = export.deserialize(bytearray((work / name).read_bytes()))
        y = exp.call(params, x)
        g = jax.grad(lambda p: exp.call(p, x).sum())(params)
    except Exception as exc:  # a module for a newer StableHLO than this jaxlib reads
        out["read"][name] = {"error": f"{type(exc).__name__}: {exc}"}
        continue
    out["read"][name] = {"y": np.asarray(y).tolist(), "dweight": np.asarray(g["weight"]).tolist()}
for name in ("special.jaxport", "fused.jaxport", "weak.jaxport"):
    if not (work / name).exists():
        continue
    try:
        exp = export.deserialize(bytearray((work / name).read_bytes()))
        args = {"special.jaxport": (jnp.asarray(np.load(work / "special_x.npy")),),
                "fused.jaxport": (x[0], x[0], x[0])}.get(name, (x[0], 2.0))
        out["read"][name] = {"y": np.asarray(exp.call(*args)).tolist()}
    except Exception as exc:  # an unregistered custom-call target, a newer StableHLO
        out["read"][name] = {"error": f"{type(exc).__name__}: {exc}"}

def f(params, x):
    return jnp.tanh(x @ params["weight"] + params["bias"]).sum(axis=-1)

b, = export.symbolic_shape("b")
spec = jax.ShapeDtypeStruct((b, 3), jnp.float32)
p_specs = collections.OrderedDict((k, jax.ShapeDtypeStruct(v.shape, v.dtype)) for k, v in params.items())
(work / "theirs.bin").write_bytes(export.export(jax.jit(f))(p_specs, spec).serialize(vjp_order=1))
print(json.dumps(out))
"""


@pytest.fixture(scope="module", params=RELEASES)
def exchanged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[str, Path, dict[str, Any]]:
    """A release's run: what it computed from jaxport's artifacts, and the artifact it wrote."""
    version: str = jax.__version__ if request.param == "current" else request.param
    python = Path(sys.executable) if request.param == "current" else venv_python(version)
    work = tmp_path_factory.mktemp(f"jax-{version}")
    b, = jaxport.symbolic_shape("b")
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), PARAMS)
    exp = jaxport.export(jax.jit(f))(specs, jax.ShapeDtypeStruct((b, 3), jnp.float32))
    (work / "sealed.jaxport").write_bytes(exp.serialize(vjp_order=1))
    (work / "unsealed.jaxport").write_bytes(exp.serialize(vjp_order=1, integrity=False))
    # Written for this release (consumer=): what it reads, whatever JAX this process has.
    jaxport.save(exp, work / "consumer.jaxport", vjp_order=1, consumer=f"jax=={version}")
    # A weak-typed scalar argument and result, written for the release (strong before JAX 0.12.1).
    weak = jaxport.export(jax.jit(lambda x, s: x * s))(jax.ShapeDtypeStruct((3,), jnp.float32), 2.0)
    jaxport.save(weak, work / "weak.jaxport", consumer=f"jax=={version}")
    if NEWEST_JAX:
        (work / "special.jaxport").write_bytes(special_functions().serialize())
        (work / "fused.jaxport").write_bytes(fused_multiply_add().serialize())
        np.save(work / "special_x.npy", SPECIAL_X)
    np.savez(work / "params.npz", weight=PARAMS["weight"], bias=PARAMS["bias"])
    np.save(work / "x.npy", X)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_PLATFORMS")}
    done = subprocess.run([str(python), "-c", OLD_RELEASE, str(work)], capture_output=True, text=True,
                          env={**env, "JAX_PLATFORMS": "cpu"}, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return version, work, json.loads(done.stdout.strip().splitlines()[-1])


def _expected() -> tuple[np.ndarray, np.ndarray]:
    y = f(PARAMS, X)
    g = jax.grad(lambda p: f(p, X).sum())(PARAMS)
    return np.asarray(y), np.asarray(g["weight"])


def test_older_jax_export_reads_calls_and_differentiates_jaxports_artifacts(
        exchanged: tuple[str, Path, dict[str, Any]]) -> None:
    version, work, out = exchanged
    assert out["jax"] == version
    y, dweight = _expected()
    # What `jaxport check --consumer jax==VERSION` says decides what the release must do.
    consumer = find_consumer(f"jax=={version}")
    said = verdict(decode_artifact((work / "unsealed.jaxport").read_bytes()), consumer, short_device_count=False)
    if not said.ok:
        assert any("StableHLO" in r for r in said.reasons), said
        for name in ("sealed.jaxport", "unsealed.jaxport"):
            assert "deserialize" in out["read"][name]["error"], out["read"][name]
        return
    for name in ("sealed.jaxport", "unsealed.jaxport"):
        np.testing.assert_allclose(out["read"][name]["y"], y, rtol=1e-5, err_msg=name)
        np.testing.assert_allclose(out["read"][name]["dweight"], dweight, rtol=1e-5, err_msg=name)


def test_each_release_reads_calls_and_differentiates_what_was_written_for_it(
        exchanged: tuple[str, Path, dict[str, Any]]) -> None:
    version, work, out = exchanged
    y, dweight = _expected()
    assert jaxport.check_consumer(work / "consumer.jaxport", f"jax=={version}").ok
    np.testing.assert_allclose(out["read"]["consumer.jaxport"]["y"], y, rtol=1e-5)
    np.testing.assert_allclose(out["read"]["consumer.jaxport"]["dweight"], dweight, rtol=1e-5)


def test_jaxport_reads_calls_and_differentiates_what_older_jax_export_wrote(
        exchanged: tuple[str, Path, dict[str, Any]]) -> None:
    _, work, _ = exchanged
    theirs = jaxport.deserialize((work / "theirs.bin").read_bytes())
    y, dweight = _expected()
    np.testing.assert_allclose(theirs.call(PARAMS, X), y, rtol=1e-5)
    grads = jax.grad(lambda p: theirs.call(p, X).sum())(PARAMS)
    np.testing.assert_allclose(grads["weight"], dweight, rtol=1e-5)
    assert jaxport.inspect((work / "theirs.bin").read_bytes()).producer is None


def test_each_release_calls_the_weak_typed_artifact_written_for_it(exchanged: tuple[str, Path, dict[str, Any]]) -> None:
    version, work, out = exchanged
    assert jaxport.check_consumer(work / "weak.jaxport", f"jax=={version}").ok
    np.testing.assert_allclose(out["read"]["weak.jaxport"]["y"], X[0] * 2.0, rtol=1e-6)


#: What JAX 0.12.1 added, by the file the release ran: the export, and its result on the release's inputs.
NEW_OPERATIONS: dict[str, tuple[Callable[[], jaxport.Exported], Callable[[], np.ndarray]]] = {
    "special.jaxport": (special_functions, lambda: np.asarray(special(jnp.asarray(SPECIAL_X)))),
    "fused.jaxport": (fused_multiply_add, lambda: X[0] * X[0] + X[0]),
}


@pytest.mark.parametrize("name", sorted(NEW_OPERATIONS))
def test_check_consumer_says_no_exactly_where_the_release_cannot_run_the_new_operations(
        exchanged: tuple[str, Path, dict[str, Any]], tmp_path: Path, name: str) -> None:
    version, work, out = exchanged
    if not NEWEST_JAX:
        pytest.skip(f"JAX {jax.__version__} writes neither lgamma's custom calls nor stablehlo.fma")
    make, expected = NEW_OPERATIONS[name]
    said = jaxport.check_consumer(work / name, f"jax=={version}")
    ran = out["read"][name]
    if said.ok:  # "yes": the release reads and runs it
        np.testing.assert_allclose(ran["y"], expected(), rtol=1e-5)
        jaxport.save(make(), tmp_path / "for.jaxport", consumer=f"jax=={version}")
    else:  # "no": the release refuses it, and nothing is written for it
        assert "error" in ran, ran
        with pytest.raises(ConsumerMismatchError, match=f"JAX {version}"):
            jaxport.save(make(), tmp_path / "for.jaxport", consumer=f"jax=={version}")
        assert not (tmp_path / "for.jaxport").exists()
    assert said.ok == (version == jax.__version__)
