"""Ports: the interfaces the services need from the adapters.

Modules travel through these ports as opaque objects: only the adapter that
made one knows what it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from .module_policy import OpSite
from .symbolic import ArgDim, ShapePlan


class ModuleInspector(Protocol):
    """The read side of the abstract IR: what the export policy looks at."""

    def sites(self, module: object) -> Iterable[OpSite]:
        """The custom calls, functions and sharding constraints of ``module``."""
        ...


class ModuleSerializer(Protocol):
    """Turns a lowered module into portable bytes."""

    def serialize(self, module: object, *, target_version: str, uses_global_constants: bool) -> bytes:
        """The portable artifact of ``module`` for a StableHLO ``target_version``."""
        ...


class MainWrapper(Protocol):
    """The build side of the abstract IR: emits the wrapped ``main`` of a plan."""

    def wrap(self, module: object, *, plan: ShapePlan, dim_vars: tuple[str, ...],
             has_platform_index: bool, nr_tokens: int, kept_var_idx: tuple[int, ...],
             shape_assertions: bool, symbolic_dims: tuple[ArgDim, ...] = ()) -> object:
        """A copy of ``module`` whose ``main`` computes its dimension variables itself."""
        ...
