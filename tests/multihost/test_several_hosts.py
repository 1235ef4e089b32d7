"""jaxport on JAX's multi-controller runtime: two local processes, 4 CPU devices each.

Each test starts a job of two processes with tests/multihost/launcher.py
(coordinator on 127.0.0.1, gloo collectives) and checks what they print
against NumPy. Skipped only where no local TCP port can be opened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from tests.multihost.launcher import MultiProcessError, launch, local_ports_unavailable

_NO_PORTS = local_ports_unavailable()
pytestmark = pytest.mark.skipif(_NO_PORTS is not None, reason=_NO_PORTS or "")

# Both processes export the same sharded function, check that their artifacts
# are the same bytes, and call the deserialized artifact under jit and eagerly
# on global arrays spread over the 8 devices of the job.
_EXPORT_AND_CALL = '''
import hashlib, json
from tests.multihost.launcher import initialize
pid = initialize()
import jax, jax.numpy as jnp, numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import jaxport

mesh = Mesh(np.array(jax.devices()).reshape(4, 2), ("data", "model"))
xs, ws, outs = P("data", None), P(None, "model"), P("data", "model")
f = jax.jit(lambda x, w: jnp.tanh(x @ w),
            in_shardings=(NamedSharding(mesh, xs), NamedSharding(mesh, ws)),
            out_shardings=NamedSharding(mesh, outs))
x_np = np.arange(8 * 6, dtype=np.float32).reshape(8, 6) / 48
w_np = np.arange(6 * 4, dtype=np.float32).reshape(6, 4) / 24
x = jax.make_array_from_callback(x_np.shape, NamedSharding(mesh, xs), lambda i: x_np[i])
w = jax.make_array_from_callback(w_np.shape, NamedSharding(mesh, ws), lambda i: w_np[i])

exp = jaxport.export(f)(x, w)
blob = exp.serialize()
again = jaxport.deserialize(blob)
eager = again.call(x, w)
jitted = jax.jit(again.call)(x, w)
native = f(x, w)
print(json.dumps({
    "pid": pid,
    "devices": [jax.device_count(), jax.local_device_count(), jax.process_count()],
    "nr_devices": again.nr_devices,
    "blob_sha": hashlib.sha256(bytes(blob)).hexdigest(),
    "eager": multihost_utils.process_allgather(eager, tiled=True).tolist(),
    "jitted": multihost_utils.process_allgather(jitted, tiled=True).tolist(),
    "native": multihost_utils.process_allgather(native, tiled=True).tolist(),
    "sharding_ok": eager.sharding.is_equivalent_to(native.sharding, 2),
}))
'''


def _reports(results: list[Any]) -> list[dict[str, Any]]:
    return [json.loads(r.stdout.strip().splitlines()[-1]) for r in results]


def test_a_sharded_function_exported_and_called_in_both_processes() -> None:
    reports = _reports(launch(_EXPORT_AND_CALL))
    x = np.arange(8 * 6, dtype=np.float32).reshape(8, 6) / 48
    w = np.arange(6 * 4, dtype=np.float32).reshape(6, 4) / 24
    expected = np.tanh(x @ w)
    assert [r["pid"] for r in reports] == [0, 1]
    for r in reports:
        assert r["devices"] == [8, 4, 2]
        assert r["nr_devices"] == 8
        assert r["sharding_ok"]
        np.testing.assert_allclose(np.array(r["native"]), expected, rtol=1e-6)
        np.testing.assert_allclose(np.array(r["eager"]), np.array(r["native"]), rtol=1e-6)
        np.testing.assert_allclose(np.array(r["jitted"]), np.array(r["native"]), rtol=1e-6)
    assert reports[0]["blob_sha"] == reports[1]["blob_sha"]


# Both processes load an artifact exported by one process with 8 devices and
# call it on the job's 8 devices (4 in each process), eagerly and under jit.
_LOAD_AND_CALL = '''
import json, sys
from tests.multihost.launcher import initialize
pid = initialize()
import jax, numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import jaxport

again = jaxport.load(sys.argv[1])
mesh = Mesh(np.array(jax.devices()), ("x",))
x_np = np.arange(16 * 3, dtype=np.float32).reshape(16, 3)
x = jax.make_array_from_callback(x_np.shape, NamedSharding(mesh, P("x")), lambda i: x_np[i])
eager = again.call(x)
jitted = jax.jit(again.call)(x)
print(json.dumps({
    "pid": pid,
    "local_devices": jax.local_device_count(),
    "eager": multihost_utils.process_allgather(eager, tiled=True).tolist(),
    "jitted": multihost_utils.process_allgather(jitted, tiled=True).tolist(),
    "eager_sharded_on_x": eager.sharding.spec == P("x"),
}))
'''


def test_an_artifact_exported_on_8_devices_runs_on_two_processes_of_4(tmp_path: Path) -> None:
    assert jax.device_count() >= 8, "tests/helpers/jax_setup.py gives this process 8 CPU devices"
    mesh = Mesh(np.array(jax.devices()[:8]), ("x",))
    f = jax.jit(lambda x: jnp.sin(x) * 2 + jnp.sum(x, axis=0),
                in_shardings=NamedSharding(mesh, P("x")), out_shardings=NamedSharding(mesh, P("x")))
    exp = jaxport.export(f)(jax.ShapeDtypeStruct((16, 3), jnp.float32))
    path = tmp_path / "f.jaxport"
    jaxport.save(exp, path)

    reports = _reports(launch(_LOAD_AND_CALL, args=[str(path)]))
    x = np.arange(16 * 3, dtype=np.float32).reshape(16, 3)
    expected = np.sin(x) * 2 + np.sum(x, axis=0)
    for r in reports:
        assert r["local_devices"] == 4
        assert r["eager_sharded_on_x"]
        np.testing.assert_allclose(np.array(r["eager"]), expected, rtol=1e-5)
        np.testing.assert_allclose(np.array(r["jitted"]), expected, rtol=1e-5)


def test_the_launcher_reports_every_process_output_when_one_fails() -> None:
    script = "import sys, os\nprint('hello', os.environ['JAXPORT_MH_PROCESS_ID'])\nsys.exit(int(os.environ['JAXPORT_MH_PROCESS_ID']) + 3)\n"
    with pytest.raises(MultiProcessError, match=r"(?s)exited with status 3.*process 0: exit status 3.*hello 0.*process 1: exit status 4.*hello 1"):
        launch(script, timeout_s=30)


def test_the_launcher_kills_a_job_that_runs_past_its_timeout() -> None:
    with pytest.raises(MultiProcessError, match=r"(?s)ran past its timeout.*killed by signal"):
        launch("import time\ntime.sleep(60)\n", timeout_s=1)
