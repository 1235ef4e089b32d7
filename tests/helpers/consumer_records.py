"""Artifact records for the tests of the consumers' table (no JAX): a module header of a StableHLO
version, and ``(float32[3]) -> float32[3]`` as jaxport writes it."""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType, TreeSpec


def module(stablehlo: str) -> bytes:
    return b"ML\xefR\rStableHLO_v" + stablehlo.encode() + b"\x00..."


def record(**changes: Any) -> ArtifactRecord:
    """``(float32[3]) -> float32[3]`` as jaxport writes it today: calling convention 10, StableHLO 1.15.0."""
    base = ArtifactRecord(
        function_name="f", in_tree=TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf()), TreeSpec.of_dict({})),
        in_avals=(AvalRecord(("3",), DType.FLOAT32),), out_tree=TreeSpec.leaf(),
        out_avals=(AvalRecord(("3",), DType.FLOAT32),), in_shardings=(None,), out_shardings=(None,),
        nr_devices=1, platforms=("cpu",), ordered_effects=(), unordered_effects=(), disabled_checks=(),
        mlir_module_serialized=module("1.15.0"), calling_convention_version=10,
        module_kept_var_idx=(0,), uses_global_constants=False)
    return dataclasses.replace(base, **changes)
