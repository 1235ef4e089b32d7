"""The :class:`Exported` object: a lowered function and everything to call it."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
from jax.core import ShapedArray
from jax.sharding import AbstractMesh, Mesh, NamedSharding

from ..adapters import jax_avals
from ..adapters.jax_call import CallTarget
from ..adapters.jax_internals import is_staging
from ..adapters.jax_records import hlo_sharding, sharding_record
from ..adapters.mlir_module import StableHloSerializer
from ..domain.artifact import NamedShardingRecord
from ..domain.errors import DtypeMismatchError, JaxportError, VjpUnavailableError
from ..domain.safety import DisabledSafetyCheck
from . import placement
from ..domain.module_bytes import ModuleBytes


@dataclass(frozen=True, eq=False)
class Exported:
    """A JAX function lowered to StableHLO, with its calling signature.

    It carries what ``jax.export.Exported`` carries, under the same names.

    Attributes:
        fun_name: the name of the exported function, for messages.
        in_tree: the pytree of ``(args, kwargs)`` the function was exported for.
        in_avals: the flat input abstract values.
        out_tree: the pytree of the results.
        out_avals: the flat output abstract values.
        in_shardings: one sharding per flat input (None: unspecified).
        out_shardings: one sharding per flat output (None: unspecified).
        nr_devices: the number of devices the module was lowered for.
        platforms: the platforms it was lowered for (``"cpu"``, ``"cuda"``...).
        ordered_effects, unordered_effects: the effects of the module.
        disabled_safety_checks: the checks disabled at export.
        mlir_module_serialized: the StableHLO portable artifact.
        calling_convention_version: the version of ``main``'s convention.
        module_kept_var_idx: the sorted indices of the flat inputs that
            ``main`` takes; the others were unused and dropped.
        uses_global_constants: whether ``main`` needs shape refinement
            (symbolic dimensions or a platform index argument).
    """

    fun_name: str
    in_tree: jax.tree_util.PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    out_tree: jax.tree_util.PyTreeDef
    out_avals: tuple[ShapedArray, ...]
    in_shardings: tuple[Any, ...]
    out_shardings: tuple[Any, ...]
    nr_devices: int
    platforms: tuple[str, ...]
    ordered_effects: tuple[Any, ...]
    unordered_effects: tuple[Any, ...]
    disabled_safety_checks: tuple[DisabledSafetyCheck, ...]
    calling_convention_version: int
    module_kept_var_idx: tuple[int, ...]
    uses_global_constants: bool
    #: Bytes, or (for in-process exports) made on first read: see ``domain.module_bytes``.
    mlir_module_serialized: ModuleBytes = ModuleBytes()
    _get_vjp: Callable[[Exported], Exported] | None = field(default=None, repr=False)
    #: Set on the VJP of a function with that many flat inputs (see ``vjp()``).
    _vjp_of_arity: int | None = field(default=None, repr=False)
    #: Exports the function vmapped over some arguments (in-process exports only).
    _batcher: Callable[[tuple[bool, ...], int], Exported] | None = field(default=None, repr=False)

    @classmethod
    def from_module(cls, module: bytes, *, in_specs: Sequence[Any], out_specs: Any,
                    platforms: Sequence[str], calling_convention_version: int,
                    nr_devices: int = 1, kwargs_specs: dict[str, Any] | None = None,
                    fun_name: str = "module",
                    disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Exported:
        """An :class:`Exported` for a raw serialized module and its signature.

        See :func:`jaxport.application.raw_module.exported_from_module`.
        """
        from .raw_module import exported_from_module

        return exported_from_module(
            cls, module, in_specs=in_specs, out_specs=out_specs, platforms=platforms,
            calling_convention_version=calling_convention_version, nr_devices=nr_devices,
            kwargs_specs=kwargs_specs, fun_name=fun_name, disabled_checks=disabled_checks)

    @property
    def lowering_platforms(self) -> tuple[str, ...]:
        """The 2023 name of :attr:`platforms`."""
        return self.platforms

    @property
    def mlir_module_serialization_version(self) -> int:
        """The 2023 name of :attr:`calling_convention_version`."""
        return self.calling_convention_version

    serialization_version = mlir_module_serialization_version

    @property
    def uses_shape_polymorphism(self) -> bool:
        """The 2023 name of :attr:`uses_global_constants`."""
        return self.uses_global_constants

    def mlir_module(self) -> str:
        """The module as StableHLO text."""
        return StableHloSerializer.to_text(self.mlir_module_serialized)

    def has_vjp(self) -> bool:
        """Whether :meth:`vjp` can provide the exported VJP."""
        return self._get_vjp is not None

    def vjp(self) -> Exported:
        """The exported VJP of this function.

        It takes the flat primal arguments followed by one cotangent per flat
        primal output, and returns the cotangents of the flat primal inputs.

        Raises:
            VjpUnavailableError: this object carries no VJP.
        """
        if self._get_vjp is None:
            raise VjpUnavailableError(
                f"No VJP is available for the exported function '{self.fun_name}'. "
                "Export it in this process with jaxport.export, or serialize it with "
                "serialize(vjp_order=1) (or higher) before deserializing.")
        return self._exported_vjp

    @functools.cached_property
    def in_shardings_hlo(self) -> tuple[Any, ...]:
        """The flat input shardings as XLA's ``HloSharding``s, None where unspecified.

        As ``jax.export.Exported.in_shardings_hlo`` holds them for a
        deserialized artifact (an export that ``jax.export`` made in the
        process leaves them all None). They name neither the mesh nor its
        devices: to place arguments, use :meth:`in_shardings_jax`.
        """
        return tuple(hlo_sharding(s, a.ndim) for s, a in zip(self.in_shardings, self.in_avals))

    @functools.cached_property
    def out_shardings_hlo(self) -> tuple[Any, ...]:
        """The flat output shardings as XLA's ``HloSharding``s (see :attr:`in_shardings_hlo`)."""
        return tuple(hlo_sharding(s, a.ndim) for s, a in zip(self.out_shardings, self.out_avals))

    def in_shardings_jax(self, mesh: Mesh | AbstractMesh) -> tuple[Any, ...]:
        """The recorded input shardings over ``mesh``, for ``jax.device_put`` or ``jax.jit``.

        Raises:
            MeshMismatchError: ``mesh``'s axes differ from the exported mesh's.
        """
        return placement.for_mesh(self.in_shardings, mesh)

    def out_shardings_jax(self, mesh: Mesh | AbstractMesh) -> tuple[Any, ...]:
        """The recorded output shardings over ``mesh`` (see :meth:`in_shardings_jax`)."""
        return placement.for_mesh(self.out_shardings, mesh)

    @functools.cached_property
    def _exported_vjp(self) -> Exported:
        """The VJP, exported (or decoded) once per object."""
        assert self._get_vjp is not None
        vjp = self._get_vjp(self)
        return dataclasses.replace(vjp, _vjp_of_arity=len(self.in_avals),
                                   mlir_module_serialized=_MODULE_BYTES.source(vjp))

    def serialize(self, vjp_order: int = 0, *, integrity: bool = True) -> bytearray:
        """The artifact bytes, in ``jax.export``'s format (jax 0.10.2).

        By default the flatbuffer is followed by the jaxport trailer: a digest
        that :func:`jaxport.deserialize` checks before parsing anything, and
        the symbolic constraints, which ``jax.export``'s format drops.
        ``jax.export.deserialize`` reads these bytes too (it ignores the trailer).

        Args:
            vjp_order: how many orders of VJP to include, for differentiating
                the deserialized function (2 allows ``jax.grad(jax.grad(f))``).
            integrity: False gives exactly the bytes ``jax.export``'s
                ``serialize()`` writes: no digest, no constraints.

        Raises:
            VjpUnavailableError: this object cannot provide VJPs of that order.
            ValueError: its pytrees hold a node type not registered for serialization.
            NonStringKeyError: its pytrees hold a dict with a key that is not a
                string (a ``TypeError``); the message names the key path.
        """
        from .serialization_write import serialize

        return serialize(self, vjp_order, integrity=integrity)

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the exported function, eagerly or from inside a JAX transformation.

        The arguments must have the pytree structure, ranks, dtypes and
        constant dimensions that the function was exported for.

        Raises:
            TreeMismatchError, RankMismatchError, DtypeMismatchError,
            ShapeMismatchError, PlatformMismatchError: the call does not match
                the export; the message names the argument path.
            ArtifactCallError: the module failed below jaxport (while being
                lowered, compiled or run by XLA); the message names the
                function and keeps XLA's (also a ``jax.errors.JaxRuntimeError``
                when XLA raised one).
        """
        try:
            if is_staging():  # the primitive joins the caller's jaxpr (see calling.py)
                return self._traced_caller(*args, **kwargs)
            return self._caller(*args, **kwargs)
        except TypeError:
            # jax.jit refuses non-array leaves (e.g. a static argument passed
            # again, an array of strings) before the tree check runs: report
            # the tree difference, or the leaf whose dtype differs.
            from .calling import check_tree

            self._check_dtypes(check_tree(self, args, kwargs))
            raise
        except Exception as exc:
            from ..adapters.jax_call import CALLER_ERRORS, call_failure

            if isinstance(exc, (JaxportError, *CALLER_ERRORS)):
                raise
            raise call_failure(self.fun_name, exc) from exc

    def _check_dtypes(self, leaves: Sequence[Any]) -> None:
        """Raises DtypeMismatchError for the first leaf with a dtype other than the exported one."""
        target = self.call_target
        for path, spec, leaf in zip(target.arg_paths, target.in_specs, leaves):
            dtype = getattr(leaf, "dtype", None)
            if dtype is not None and str(dtype) != spec.dtype:
                raise DtypeMismatchError(path, spec.dtype, str(dtype))

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name}, ...)"

    def __repr__(self) -> str:
        ins = ", ".join(str(a.str_short()) for a in self.in_avals)
        outs = ", ".join(str(a.str_short()) for a in self.out_avals)
        return (f"Exported(fun_name={self.fun_name!r}, ({ins}) -> ({outs}), "
                f"platforms={self.platforms}, nr_devices={self.nr_devices})")

    @functools.cached_property
    def call_target(self) -> CallTarget:
        """What the ``jaxport_call`` primitive needs to call this function."""
        return CallTarget(
            fun_name=self.fun_name,
            in_avals=self.in_avals,
            out_avals=self.out_avals,
            in_specs=jax_avals.specs_of(self.in_avals),
            arg_paths=jax_avals.leaf_paths(self.in_tree, self.in_avals),
            platforms=self.platforms,
            disabled_checks=self.disabled_safety_checks,
            # Read through this object, which serializes an in-process export once.
            module_bytes=lambda: self.mlir_module_serialized,
            kept_var_idx=self.module_kept_var_idx,
            uses_global_constants=self.uses_global_constants,
            nr_devices=self.nr_devices,
            vjp=(lambda: self.vjp().call_target) if self.has_vjp() else None,
            vjp_of_arity=self._vjp_of_arity,
            batched=_batched_targets(self._batcher),
            ordered_effects=self.ordered_effects,
            unordered_effects=self.unordered_effects,
            in_shardings=self.in_shardings,
            out_shardings=self.out_shardings,
            in_sharding_records=tuple(_named_record(s) for s in self.in_shardings),
        )

    def warm(self, *args_specs: Any, **kwargs_specs: Any) -> str:
        """Compiles the eager call for these specs into JAX's persistent compilation cache.

        A deployment step can run it before traffic arrives, so that the
        first call of a later process loads the executable from JAX's cache
        instead of compiling it (see the guide's "Cold start and JAX's
        compilation cache"). The cache is JAX's, configured as JAX users
        configure it (``JAX_COMPILATION_CACHE_DIR``, or
        ``jax.config.update("jax_compilation_cache_dir", ...)`` before the
        process's first compilation); jaxport changes none of JAX's settings.

        Args:
            *args_specs, **kwargs_specs: the arguments to compile for, as
                ``jax.ShapeDtypeStruct`` or arrays, in the exported pytree;
                by default the exported avals (only when they are static).

        Returns:
            The directory of JAX's compilation cache that now holds the call.

        Raises:
            CacheConfigError: no compilation cache is configured, or JAX did
                not write the entry (its ``jax_persistent_cache_min_*``
                thresholds, or a cache JAX does not use in this process); the
                message names the setting to change.
            CallError: no specs were given and some exported dimension is symbolic.
            TreeMismatchError, ShapeMismatchError, ...: the specs do not match the export.
        """
        from .calling import make_caller
        from .warm import warm

        return warm(self, make_caller(self), args_specs, kwargs_specs)

    @functools.cached_property
    def _caller(self) -> Callable[..., Any]:
        from .calling import make_caller

        return make_caller(self)

    @functools.cached_property
    def _traced_caller(self) -> Callable[..., Any]:
        from .calling import make_traced_caller

        return make_traced_caller(self)

    def _module_digest(self) -> bytes:
        """The SHA-256 of the module bytes, computed once and kept (see domain/module_bytes.py)."""
        return _MODULE_BYTES.digest(self)



_MODULE_BYTES: ModuleBytes = Exported.__dict__["mlir_module_serialized"]


def _named_record(sharding: Any) -> NamedShardingRecord | None:
    record = sharding_record(sharding) if isinstance(sharding, NamedSharding) else None
    return record if isinstance(record, NamedShardingRecord) else None


def _batched_targets(
        batcher: Callable[[tuple[bool, ...], int], Exported] | None
) -> Callable[[tuple[bool, ...], int], CallTarget] | None:
    if batcher is None:
        return None
    return lambda batched, size: batcher(batched, size).call_target


def call_exported(exported: Exported) -> Callable[..., Any]:
    """The 2023 spelling of ``exported.call``: returns the calling function."""
    if not isinstance(exported, Exported):
        raise TypeError(f"call_exported expects a jaxport.Exported, got {type(exported).__name__}")
    return exported.call
