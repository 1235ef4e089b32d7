"""The ports: the StableHLO module, the lowerer that makes one, and the host arrays runtimes speak.

Each is a port because its users are tested with a fake of it
(tests/e2e/test_export_service.py) as well as wired with its adapter
(:mod:`jaxport.application.wiring`: :func:`~jaxport.application.wiring.stablehlo`,
:func:`~jaxport.application.wiring.lowerer`). A module travels through them as
a :class:`LoweredModule`, an opaque value: only the adapter that made one knows
what it is (an MLIR module, for :class:`~jaxport.adapters.mlir.module.MlirStableHlo`).
A target's runtime port is :class:`~jaxport.domain.targets.ports.TargetRuntime`
(function names, variants and flat :class:`HostArray` values), each handed calls
that the front (:mod:`jaxport.domain.calls.front`) has checked already; the
targets' ports live beside their registry, in :mod:`jaxport.domain.targets.ports`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from jaxport.domain.symbolic import ArgDim, ShapePlan

if TYPE_CHECKING:
    # Only an export walks a module for its policy: loading imports this module but not the policy's
    # (tests/e2e/test_load_path_imports.py).
    from jaxport.domain.artifact.module_policy import OpSite


class HostArray(Protocol):
    """An array in host memory, as runtimes take and give them (a NumPy array, for one).

    ``str(dtype)`` is the NumPy-style dtype name (``"float32"``, ``"bfloat16"``).
    """

    @property
    def shape(self) -> tuple[int, ...]:
        """The concrete dimensions."""
        ...

    @property
    def dtype(self) -> object:
        """The element type."""
        ...


class LoweredModule(Protocol):
    """A module in memory, opaque: only the :class:`StableHlo` adapter that made it (or the
    lowerer that made it for that adapter) knows what it is."""

_Lowering_co = TypeVar("_Lowering_co", covariant=True)


class StableHlo(Protocol):
    """StableHLO modules: what the export policy, the wrapper, the verifier, ``diff`` and the
    demo need of one, in memory (a :class:`LoweredModule`) or as a portable artifact (bytes)."""

    def sites(self, module: LoweredModule) -> Iterable[OpSite]:
        """The custom calls of ``module``, for the export policy."""
        ...

    def op_names(self, module: LoweredModule) -> list[str]:
        """The names of all operations of ``module``, in walk order."""
        ...

    def wrap_main(self, module: LoweredModule, *, plan: ShapePlan, dim_vars: tuple[str, ...],
                  has_platform_index: bool, nr_tokens: int, kept_var_idx: tuple[int, ...],
                  shape_assertions: bool, symbolic_dims: tuple[ArgDim, ...] = ()) -> LoweredModule:
        """A copy of ``module`` whose ``main`` computes its dimension variables by ``plan``
        (and checks its assertions when ``shape_assertions``); ``module`` is left unchanged."""
        ...

    def serialize(self, module: LoweredModule, *, target_version: str, uses_global_constants: bool) -> bytes:
        """The portable artifact of ``module`` for a StableHLO ``target_version``."""
        ...

    def deserialize(self, blob: bytes) -> LoweredModule:
        """The module of a portable artifact (one already verified: parsing runs here)."""
        ...

    def to_text(self, blob: bytes) -> str:
        """The module of a portable artifact as StableHLO text."""
        ...

    def donated_arguments(self, blob: bytes) -> tuple[bool, ...]:
        """For each argument of ``main`` of a portable artifact, whether the module donates its
        buffer (it carries one of :data:`~jaxport.domain.artifact.calling_convention.DONATION_ATTRS`)."""
        ...

    def newest_readable_version(self) -> str:
        """The newest StableHLO version :meth:`deserialize` reads."""
        ...

    def parser_version(self) -> str:
        """The version of the parser a verification verdict depends on."""
        ...


class Lowerer(Protocol[_Lowering_co]):
    """Traces and lowers a function for export; what a lowering holds is the export service's."""

    def lower(self, fun: Callable[..., Any], platforms: tuple[str, ...],
              args_specs: Sequence[Any], kwargs_specs: Mapping[str, Any],
              override_lowering_rules: tuple[tuple[Any, Any], ...] | None = None) -> _Lowering_co:
        """``fun`` traced at the given specs and lowered for ``platforms``."""
        ...
