"""Two processes on JAX's distributed runtime (4 CPU devices each) load a bundle sharded over a 2x4 mesh."""

from __future__ import annotations

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from tests.multihost.launcher import launch, local_ports_unavailable

pytestmark = [pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 devices (tests/helpers/jax_setup.py)"),
              pytest.mark.skipif(local_ports_unavailable() is not None, reason=str(local_ports_unavailable()))]


def save_sharded_bundle(path: Path) -> dict[str, jax.Array]:
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    params = {"w": jnp.arange(48, dtype=jnp.float32).reshape(6, 8) / 48, "b": jnp.linspace(-1, 1, 8)}
    shardings = {"w": NamedSharding(mesh, P(None, "model")), "b": NamedSharding(mesh, P())}
    f = jax.jit(lambda p, x: jnp.tanh(x @ p["w"] + p["b"]), in_shardings=(shardings, NamedSharding(mesh, P("data", None))),
                out_shardings=NamedSharding(mesh, P("data", "model")))
    specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    jaxport.save_bundle(path, {"predict": jaxport.export(f)(specs, jax.ShapeDtypeStruct((4, 6), jnp.float32))}, params)
    return params


def test_both_processes_load_the_sharded_bundle_and_call_it(tmp_path: Path) -> None:
    params = save_sharded_bundle(tmp_path / "model")
    x = np.arange(24, dtype=np.float32).reshape(4, 6) / 24
    want = np.tanh(x @ np.asarray(params["w"]) + np.asarray(params["b"]))
    child = Path(__file__).with_name("bundle_child.py").read_text()
    done = launch(child, 2, cpu_devices_per_process=4, timeout_s=240, args=[str(tmp_path / "model")])
    results = [json.loads(r.stdout.strip().splitlines()[-1]) for r in done]
    assert [r["process"] for r in results] == [0, 1]
    for r in results:
        assert r["devices"] == 8 and r["w_sharding"] == "P(None, 'model')"
        assert r["w_local_shards"] == 4 and r["w_fully_addressable"] is False
        for how in ("eager", "jit", "bound_jit"):
            np.testing.assert_allclose(np.asarray(r[how]), want, rtol=1e-6, atol=1e-6, err_msg=how)
