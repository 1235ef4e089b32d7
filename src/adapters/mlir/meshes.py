"""The Shardy meshes a module declares (``sdy.mesh`` operations), read in the verifying process."""

from __future__ import annotations

from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import sdy

from . import bindings as jaxlib_mlir


def module_meshes(module_bytes: bytes) -> list[dict[str, Any]]:
    """Each ``sdy.mesh`` of a (verified) module: its symbol, its axes (name, size) and device ids, as JSON
    (:func:`jaxport.domain.artifact.op_sharding.meshes_from_json` reads it)."""
    context = jaxlib_mlir.make_context()
    module = jaxlib_mlir.deserialize_portable_artifact(module_bytes, context)
    found = []
    with context:
        for op in module.body.operations:
            if op.operation.name != "sdy.mesh":
                continue
            mesh = sdy.MeshAttr(op.attributes["mesh"])
            axes = [[sdy.MeshAxisAttr(a).name, sdy.MeshAxisAttr(a).size] for a in mesh.axes]
            found.append({"name": ir.StringAttr(op.attributes["sym_name"]).value, "axes": axes,
                          "device_ids": list(mesh.device_ids)})
    return found
