"""One host of the two-process bundle test: load a bundle sharded over a 2x4 mesh, call it, print the result."""

from __future__ import annotations

import json
import sys

from tests.multihost.launcher import initialize

initialize()

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

import jaxport  # noqa: E402


def main(path: str) -> None:
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
    bundle = jaxport.load_bundle(path, mesh=mesh)
    w = bundle.params["w"]
    x_host = np.arange(24, dtype=np.float32).reshape(4, 6) / 24
    x = jax.make_array_from_callback((4, 6), NamedSharding(mesh, P("data", None)), lambda idx: x_host[idx])
    eager = bundle["predict"](x)
    jitted = jax.jit(bundle.functions["predict"].call)(bundle.params, x)
    print(json.dumps({
        "process": jax.process_index(), "devices": jax.device_count(),
        "w_sharding": str(w.sharding.spec), "w_local_shards": len(w.addressable_shards),
        "w_fully_addressable": w.is_fully_addressable,
        "eager": np.asarray(multihost_utils.process_allgather(eager, tiled=True)).tolist(),
        "jit": np.asarray(multihost_utils.process_allgather(jitted, tiled=True)).tolist(),
        "bound_jit": np.asarray(multihost_utils.process_allgather(
            jax.jit(lambda x: bundle["predict"](x) * 1)(x), tiled=True)).tolist(),
    }))


if __name__ == "__main__":
    main(sys.argv[1])
