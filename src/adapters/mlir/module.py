"""StableHLO modules through jaxlib's MLIR bindings: the :class:`~jaxport.domain.ports.StableHlo` port.

A :class:`~jaxport.domain.ports.LoweredModule` made here is an ``ir.Module``.
:class:`MlirStableHlo` is the port's adapter, which the services are handed; the
functions beside it read an artifact's module for the JAX-facing ``Exported``
(its text, its donated arguments) and for the other MLIR adapters, as
``jax.export``'s ``Exported`` reads its own with jaxlib's MLIR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from jax.interpreters import mlir
from jaxlib.mlir import ir  # what jax.extend.mlir re-exports (importing it costs a fresh process's first call)
# jaxlib's own version string (importlib.metadata's, which it is built from, would cost a fresh
# process's first load tens of milliseconds of reading installed packages' metadata).
from jaxlib.version import __version__ as jaxlib_version

from jaxport.adapters.jax import internals as jax_internals
from jaxport.domain.artifact.calling_convention import DONATION_ATTRS
from jaxport.domain.ports import LoweredModule
from jaxport.domain.symbolic import ArgDim, ShapePlan
from .bindings import (
    deserialize_portable_artifact, export_target_version, newest_readable_version, operations,
    serialize_portable_artifact
)

if TYPE_CHECKING:
    # Imported where the policy's walk runs (an export): loading and calling read modules through this
    # module but never walk one (the policy's module: 1.5 ms of a fresh first answer under -X importtime).
    from jaxport.domain.artifact.module_policy import OpKind, OpSite


class MlirStableHlo:
    """Walks, wraps, serializes and reads StableHLO modules with jaxlib's MLIR (the composition
    root holds the one instance the services use)."""

    def sites(self, module: LoweredModule) -> list[OpSite]:
        """The custom calls of ``module``.

        The walk visits every operation once (``Operation.walk`` runs in C++ and
        calls back only to classify), so it is linear in the module's size.
        """
        from jaxport.domain.artifact.module_policy import OpKind

        kinds = {k.value: k for k in OpKind}
        return [_site(kinds[op.name], op) for op in operations(_ir(module)) if op.name in kinds]

    def op_names(self, module: LoweredModule) -> list[str]:
        """The names of all operations of ``module``, in walk order."""
        return [op.name for op in operations(_ir(module))]

    def wrap_main(self, module: LoweredModule, *, plan: ShapePlan, dim_vars: tuple[str, ...],
                  has_platform_index: bool, nr_tokens: int, kept_var_idx: tuple[int, ...],
                  shape_assertions: bool, symbolic_dims: tuple[ArgDim, ...] = ()) -> ir.Module:
        """A copy of ``module`` whose ``main`` computes its dimension variables (:func:`.wrap.wrap_main`)."""
        # Only a shape-polymorphic export wraps: loading never imports the wrapper (nor, through it,
        # jax.extend; tests/e2e/test_load_path_imports.py).
        from .wrap import wrap_main

        wrapped: ir.Module = wrap_main(_ir(module), plan=plan, dim_vars=dim_vars,
                                       has_platform_index=has_platform_index, nr_tokens=nr_tokens,
                                       kept_var_idx=kept_var_idx, shape_assertions=shape_assertions,
                                       symbolic_dims=symbolic_dims)
        return wrapped

    def serialize(self, module: LoweredModule, *, target_version: str, uses_global_constants: bool) -> bytes:
        """The portable artifact of ``module`` for ``target_version``.

        The module gets the ``jax.uses_shape_polymorphism`` attribute that
        consumers read to decide on shape refinement; the attribute is set
        only for the duration of the call, so a cached module is left as found.
        """
        ir_module = _ir(module)
        attrs = ir_module.operation.attributes
        with ir_module.context:
            previous = attrs["jax.uses_shape_polymorphism"] if "jax.uses_shape_polymorphism" in attrs else None
            attrs["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(uses_global_constants)
            try:
                return serialize_portable_artifact(ir_module, target_version,
                                                   jax_internals.backend_serializes_with_sdy())
            finally:
                if previous is None:
                    del attrs["jax.uses_shape_polymorphism"]
                else:
                    attrs["jax.uses_shape_polymorphism"] = previous

    def deserialize(self, blob: bytes) -> ir.Module:
        """The ``ir.Module`` of a portable artifact, in a new context (:func:`read_module`)."""
        return read_module(blob)

    def export_target_version(self) -> str:
        """The StableHLO version that ``jax.export`` targets with this jaxlib (:func:`.bindings.export_target_version`)."""
        return export_target_version()

    def newest_readable_version(self) -> str:
        """The newest StableHLO version this jaxlib deserializes."""
        return newest_readable_version()

    def parser_version(self) -> str:
        """The version of the parser a verdict depends on (jaxlib's StableHLO reader, which the
        verifying process runs)."""
        return f"jaxlib {jaxlib_version}, StableHLO {newest_readable_version()}"


def read_module(blob: bytes, context: Any | None = None) -> ir.Module:
    """The ``ir.Module`` of a portable artifact, in ``context`` or a new one of JAX's."""
    if context is None:
        context = mlir.make_ir_context()
    with context:
        module: ir.Module = deserialize_portable_artifact(blob, context)
        return module


def module_text(blob: bytes) -> str:
    """The module of a portable artifact as StableHLO text, with locations as JAX prints them."""
    return str(mlir.module_to_string(read_module(blob)))


def donated_arguments(blob: bytes) -> tuple[bool, ...]:
    """For each argument of ``main`` of a portable artifact, whether the module donates its buffer.

    Read from the argument attributes that ``jax.jit(..., donate_argnums=...)``'s
    lowering writes and ``jax.export`` keeps (:data:`DONATION_ATTRS`): the
    artifact's own bytes, no field of jaxport's.
    """
    main = ir.SymbolTable(read_module(blob).operation)["main"]
    count = len(ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs)
    if "arg_attrs" not in main.attributes:
        return (False,) * count
    return tuple(any(name in ir.DictAttr(attrs) for name in DONATION_ATTRS)
                 for attrs in ir.ArrayAttr(main.attributes["arg_attrs"]))


def _ir(module: LoweredModule) -> ir.Module:
    """The ``ir.Module`` that a module made by this adapter is."""
    return cast(ir.Module, module)


def _site(kind: OpKind, op: ir.Operation) -> OpSite:
    from jaxport.domain.artifact.module_policy import OpSite

    target = ir.StringAttr(op.attributes["call_target_name"]).value
    return OpSite(kind, target, describe=lambda: f"{op} at {op.location}")
