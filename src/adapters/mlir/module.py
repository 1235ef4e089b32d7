"""StableHLO modules through jaxlib's MLIR bindings: walk, serialize, print."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from jax.interpreters import mlir
from jaxlib.mlir import ir  # what jax.extend.mlir re-exports (importing it costs a fresh process's first call)

from jaxport.adapters.jax import internals as jax_internals
from .bindings import deserialize_portable_artifact, serialize_portable_artifact

if TYPE_CHECKING:
    # Imported where the inspector runs (an export): loading and calling read modules through this
    # module but never walk one (the policy's module: 1.5 ms of a fresh first answer under -X importtime).
    from jaxport.domain.artifact.module_policy import OpKind, OpSite


class MlirModuleInspector:
    """Reports the operations of a module that the export policy looks at.

    The walk visits every operation once (``Operation.walk`` runs in C++ and
    calls back only to classify), so it is linear in the module's size.
    """

    def sites(self, module: Any) -> list[OpSite]:
        """The custom calls of ``module``."""
        from jaxport.domain.artifact.module_policy import OpKind

        kinds = {k.value: k for k in OpKind}
        found: list[OpSite] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            kind = kinds.get(op.name)
            if kind is not None:
                found.append(_site(kind, op))
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        return found


def _site(kind: OpKind, op: ir.Operation) -> OpSite:
    from jaxport.domain.artifact.module_policy import OpSite

    target = ir.StringAttr(op.attributes["call_target_name"]).value
    return OpSite(kind, target, describe=lambda: f"{op} at {op.location}")


class StableHloSerializer:
    """Serializes modules as StableHLO portable artifacts, and reads them back.

    Reading needs no instance (those methods are static); an instance is the
    export service's :class:`~jaxport.domain.ports.ModuleSerializer`.
    """

    @staticmethod
    @functools.cache  # fixed for the process's jaxlib; asked at every deserialize
    def newest_readable_version() -> str:
        """The newest StableHLO version this jaxlib deserializes."""
        from jaxlib.mlir.dialects import stablehlo

        return str(stablehlo.get_current_version())

    def serialize(self, module: Any, *, target_version: str, uses_global_constants: bool) -> bytes:
        """The portable artifact of ``module`` for ``target_version``.

        The module gets the ``jax.uses_shape_polymorphism`` attribute that
        consumers read to decide on shape refinement; the attribute is set
        only for the duration of the call, so a cached module is left as found.
        """
        attrs = module.operation.attributes
        with module.context:
            previous = attrs["jax.uses_shape_polymorphism"] if "jax.uses_shape_polymorphism" in attrs else None
            attrs["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(uses_global_constants)
            try:
                return serialize_portable_artifact(module, target_version,
                                                   jax_internals.backend_serializes_with_sdy())
            finally:
                if previous is None:
                    del attrs["jax.uses_shape_polymorphism"]
                else:
                    attrs["jax.uses_shape_polymorphism"] = previous

    @staticmethod
    def deserialize(blob: bytes, context: Any | None = None) -> Any:
        """The ``ir.Module`` of a portable artifact, in ``context`` or a new one."""
        if context is None:
            context = mlir.make_ir_context()
        with context:
            return deserialize_portable_artifact(blob, context)

    @staticmethod
    def to_text(blob: bytes) -> str:
        """The module of a portable artifact as StableHLO text, with locations as JAX prints them."""
        context = mlir.make_ir_context()
        module = StableHloSerializer.deserialize(blob, context)
        return str(mlir.module_to_string(module))

    @staticmethod
    def op_names(module: Any) -> list[str]:
        """The names of all operations of ``module``, in walk order."""
        names: list[str] = []

        def visit(op: ir.Operation) -> ir.WalkResult:
            names.append(op.name)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        return names
