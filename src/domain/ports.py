"""The ports: the StableHLO module, the lowerer that makes one, the verifying process, the store of
verdicts and the known files, and the host arrays runtimes speak.

Each is a port because its users are tested with a fake of it
(tests/e2e/test_export_service.py, tests/helpers/fake_verdicts.py) as well as wired with its adapter
(:mod:`jaxport.application.wiring`: :func:`~jaxport.application.wiring.stablehlo`,
:func:`~jaxport.application.wiring.lowerer`, :func:`~jaxport.application.wiring.module_worker`,
:func:`~jaxport.application.wiring.verdict_store`, :func:`~jaxport.application.wiring.known_files`).
A module travels through them as a :class:`LoweredModule`, an opaque value: only the adapter that
made one knows what it is (an MLIR module, for :class:`~jaxport.adapters.mlir.module.MlirStableHlo`).
A target's runtime port is :class:`~jaxport.domain.targets.ports.TargetRuntime`
(function names, variants and flat :class:`HostArray` values), each handed calls
that the front (:mod:`jaxport.domain.calls.front`) has checked already; the
targets' ports live beside their registry, in :mod:`jaxport.domain.targets.ports`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    # Types only: a module that names a port imports none of what the ports speak (loading
    # imports this module, but not the export policy's; tests/e2e/test_load_path_imports.py).
    import os

    from jaxport.domain.symbolic import ArgDim, ShapePlan
    from jaxport.domain.artifact.kernels import Kernel
    from jaxport.domain.artifact.module_policy import OpSite
    from jaxport.domain.artifact.op_sharding import ModuleMesh
    from jaxport.domain.artifact.verification import ModuleFacts, Verdict


class HostArray(Protocol):
    """An array in host memory, as runtimes take and give them (a NumPy array, for one).

    ``str(dtype)`` is the NumPy-style dtype name (``"float32"``, ``"bfloat16"``).
    """

    @property
    def shape(self) -> tuple[int, ...]:
        """The concrete dimensions."""

    @property
    def dtype(self) -> object:
        """The element type."""


class LoweredModule(Protocol):
    """A module in memory, opaque: only the :class:`StableHlo` adapter that made it (or the
    lowerer that made it for that adapter) knows what it is."""

_Lowering_co = TypeVar("_Lowering_co", covariant=True)


class StableHlo(Protocol):
    """StableHLO modules: what the export service, the verifier and ``diff`` need of one, in memory
    (a :class:`LoweredModule`) or as a portable artifact (bytes)."""

    def sites(self, module: LoweredModule) -> Iterable[OpSite]:
        """The custom calls of ``module``, for the export policy."""

    def op_names(self, module: LoweredModule) -> list[str]:
        """The names of all operations of ``module``, in walk order."""

    def wrap_main(self, module: LoweredModule, *, plan: ShapePlan, dim_vars: tuple[str, ...],
                  has_platform_index: bool, nr_tokens: int, kept_var_idx: tuple[int, ...],
                  shape_assertions: bool, symbolic_dims: tuple[ArgDim, ...] = ()) -> LoweredModule:
        """A copy of ``module`` whose ``main`` computes its dimension variables by ``plan``
        (and checks its assertions when ``shape_assertions``); ``module`` is left unchanged."""

    def serialize(self, module: LoweredModule, *, target_version: str, uses_global_constants: bool) -> bytes:
        """The portable artifact of ``module`` for a StableHLO ``target_version``."""

    def deserialize(self, blob: bytes) -> LoweredModule:
        """The module of a portable artifact (one already verified: parsing runs here)."""

    def export_target_version(self) -> str:
        """The StableHLO version an export writes its module for (what ``jax.export`` targets)."""

    def newest_readable_version(self) -> str:
        """The newest StableHLO version :meth:`deserialize` reads."""

    def parser_version(self) -> str:
        """The version of the parser a verification verdict depends on."""


class Lowerer(Protocol[_Lowering_co]):
    """Traces and lowers a function for export; what a lowering holds is the export service's."""

    def lower(self, fun: Callable[..., Any], platforms: tuple[str, ...],
              args_specs: Sequence[Any], kwargs_specs: Mapping[str, Any],
              override_lowering_rules: tuple[tuple[Any, Any], ...] | None = None) -> _Lowering_co:
        """``fun`` traced at the given specs and lowered for ``platforms``."""


@dataclass(frozen=True, slots=True)
class CheckedModule:
    """A module as the verifying process saw it.

    Attributes:
        facts: ``main``'s types and the custom-call targets.
        reserialized: the module as the serializer wrote it after parsing (or the
            form of it that the request asked for).
        kernels: its kernels, when the request asked for them (``{"kernels": ...}``).
        meshes: its Shardy meshes, when the request asked for them (``{"meshes": true}``).
    """

    facts: ModuleFacts
    reserialized: bytes
    kernels: tuple[Kernel, ...] = ()
    meshes: tuple[ModuleMesh, ...] = ()


class ModuleWorker(Protocol):
    """The process that parses untrusted modules, so that this one never does
    (:class:`~jaxport.adapters.mlir.worker.ChildModuleWorker`)."""

    def check(self, module: bytes, *, sdy: bool, form: Mapping[str, Any] | None = None) -> CheckedModule:
        """Parses, verifies and re-serializes ``module`` (with Shardy's ops kept when ``sdy``), or
        makes the ``form`` of it that is asked for (:mod:`jaxport.adapters.mlir.rewrite`).

        Raises:
            ArtifactError: the module does not parse or verify, or the process died or timed out on it.
            ValueError: the form asked for cannot be made of the module.
        """


class VerdictStore(Protocol):
    """Where verdicts are remembered by key (:class:`~jaxport.adapters.storage.verdict_store.FileVerdictStore`)."""

    def get(self, key: str) -> Verdict | None:
        """The verdict remembered under ``key``, if any."""

    def put(self, key: str, verdict: Verdict) -> None:
        """Remembers ``verdict`` under ``key`` (best effort)."""


class KnownFiles(Protocol):
    """The files whose digests were found equal to a manifest's before, by identity
    (:class:`~jaxport.adapters.storage.checked_directory.StatKnownFiles`)."""

    def check(self, path: str | os.PathLike[str], status: os.stat_result, digest: str,
              compute: Callable[[], str]) -> str:
        """``digest`` when the file of ``status`` (``os.fstat`` of the descriptor read) was found to
        have it before and is unchanged since, else ``compute()`` (the digest of the bytes read through
        that descriptor), remembered when it is ``digest``."""

