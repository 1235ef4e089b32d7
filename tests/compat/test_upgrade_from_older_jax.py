"""``jaxport upgrade`` of what older JAX releases' ``jax.export`` wrote, called on this JAX as recorded.

JAX 0.8.1, 0.8.3 and 0.9.2 (virtual environments of their own, :mod:`tests.helpers.compat_venvs`)
export, on two CPU devices, a function sharded by rows over a mesh ``{x: 2}``, once
partitioned with Shardy and once with GSPMD (``mhlo.sharding`` annotations in the
module), and a function with a symbolic batch and its VJP; each records its
results there (the sharded function's by calling it: JAX 0.9.2's own ``exp.call``
of a sharded export fails under ``jit``, a verifier error on its ``Sharding``
custom call). JAX 0.8.x records the shardings as HLO sharding protos, and 0.8.1
its device count in the 16-bit field alone, both of which this JAX's ``jax.export``
refuses; every artifact is upgraded here, read by
jaxport and by ``jax.export``, and called with the results recorded when it was written.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

import jaxport
from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.adapters.flatbuffers.decode import records_short_device_count_only
from jaxport.domain.artifact.sharding import HloShardingRecord, NamedShardingRecord
from tests.helpers.compat_venvs import venv_python
from tests.helpers.upgrade_artifacts import X, placed_x

pytestmark = pytest.mark.compat_matrix

# Run by the older release's Python; imports neither jaxport nor anything of this repository.
OLD_RELEASE = r"""
import json, os, sys
from pathlib import Path
import numpy as np
import jax, jax.numpy as jnp
from jax import export
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

work = Path(sys.argv[1])
x = np.load(work / "x.npy")
mesh = Mesh(np.array(jax.devices()[:2]), ("x",))
rows, whole = NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P())
out = {"jax": jax.__version__}

def f(a):
    return jnp.sin(a) * 2.0, a.sum(axis=0)

for name, shardy in (("shardy", True), ("gspmd", False)):
    jax.config.update("jax_use_shardy_partitioner", shardy)
    jitted = jax.jit(f, in_shardings=rows, out_shardings=(rows, whole))
    exp = export.export(jitted)(jax.ShapeDtypeStruct(x.shape, jnp.float32, sharding=rows))
    (work / f"{name}.bin").write_bytes(exp.serialize())
    # The function's results there (JAX 0.9.2's own exp.call of a sharded export fails under jit).
    out[name] = [np.asarray(r).tolist() for r in jitted(jax.device_put(x, rows))]
jax.config.update("jax_use_shardy_partitioner", True)

def g(a):
    return jnp.tanh(a).sum(axis=-1)

b, = export.symbolic_shape("b")
exp = export.export(jax.jit(g))(jax.ShapeDtypeStruct((b, 6), jnp.float32))
(work / "symbolic.bin").write_bytes(exp.serialize(vjp_order=1))
out["symbolic"] = [np.asarray(exp.call(x)).tolist(), np.asarray(jax.grad(lambda a: exp.call(a).sum())(x)).tolist()]
print(json.dumps(out))
"""


@pytest.fixture(scope="module", params=("0.8.1", "0.8.3", "0.9.2"))
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, dict[str, Any]]:
    """An older release's artifacts and the results it recorded when it wrote them."""
    version: str = request.param
    work = tmp_path_factory.mktemp(f"upgrade-{version}")
    np.save(work / "x.npy", X)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_PLATFORMS", "XLA_FLAGS")}
    done = subprocess.run([str(venv_python(version)), "-c", OLD_RELEASE, str(work)], capture_output=True, text=True,
                          env={**env, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=2"},
                          timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["jax"] == version
    return version, work, out


@pytest.mark.parametrize("name", ["shardy", "gspmd"])
def test_older_jaxs_sharded_artifacts_are_renewed_and_called_as_recorded(
        written: tuple[str, Path, dict[str, Any]], name: str) -> None:
    version, work, out = written
    old, new = work / f"{name}.bin", work / f"{name}-renewed.jaxport"
    hlo_era = any(isinstance(s, HloShardingRecord) for s in decode_artifact(old.read_bytes()).in_shardings)
    assert hlo_era == (version != "0.9.2")  # JAX 0.9.0 and later record named shardings
    # JAX 0.8.1 (format generation 4) records its device count in the 16-bit field alone.
    assert records_short_device_count_only(old.read_bytes()) == (version == "0.8.1")
    if hlo_era:
        with pytest.raises(ValueError, match="6-month backward-compatibility window"):
            jax.export.deserialize(bytearray(old.read_bytes()))
    expired = [r for r in jaxport.check_consumer(old, "jax==0.12.0.1").reasons if "jaxport upgrade" in r]
    assert [("HLO sharding" in r, "nr_devices_short" in r) for r in expired] == (
        [(True, False)] + ([(False, True)] if version == "0.8.1" else []) if hlo_era else [])
    report = jaxport.upgrade(old, new)
    assert any("GSPMD" in n for n in report.notes) == (name == "gspmd")
    assert not any("jaxport upgrade" in r for r in jaxport.check_consumer(new, "jax==0.12.0.1").reasons)
    renewed = decode_artifact(new.read_bytes())
    named = renewed.in_shardings[0]
    assert isinstance(named, NamedShardingRecord) and renewed.jax_version == jax.__version__
    # Over the module's own Shardy mesh, whose axis names the exporter's mesh had; a GSPMD module has none.
    assert named.mesh.axis_names == (("_axis_0",) if hlo_era and name == "gspmd" else ("x",))
    assert not records_short_device_count_only(new.read_bytes()) and renewed.nr_devices == 2
    for reader in (jaxport.load(new), jax.export.deserialize(bytearray(new.read_bytes()))):
        got = jax.jit(reader.call)(placed_x())
        for mine, theirs in zip(got, out[name], strict=True):
            np.testing.assert_allclose(np.asarray(mine), theirs, rtol=1e-6)


def test_older_jaxs_symbolic_artifact_with_its_vjp_is_renewed_and_differentiates_as_recorded(
        written: tuple[str, Path, dict[str, Any]]) -> None:
    _, work, out = written
    new = work / "symbolic-renewed.jaxport"
    jaxport.upgrade(work / "symbolic.bin", new)
    loaded = jaxport.load(new)
    np.testing.assert_allclose(loaded.call(X), out["symbolic"][0], rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda a: loaded.call(a).sum())(X), out["symbolic"][1], rtol=1e-6)
    theirs = jax.export.deserialize(bytearray(new.read_bytes()))
    np.testing.assert_allclose(theirs.call(X[:2]), out["symbolic"][0][:2], rtol=1e-6)
