"""JAX's MLIR context and portable-artifact functions, from jaxlib alone.

The verifying process (:mod:`~jaxport.adapters.mlir.worker_main`) parses,
verifies and re-serializes modules exactly as JAX would, without importing
``jax``: importing it costs that process more than all its other work on a
typical module. Everything here comes from ``jaxlib``, which ``jax`` itself
wraps: :func:`make_context` builds the context that
``jax.interpreters.mlir.make_ir_context`` builds, and the two
portable-artifact functions are those that ``jax.extend.mlir`` re-exports.
tests/adapters/test_jaxlib_mlir.py checks that the bytes written here equal
those written through JAX.
"""

from __future__ import annotations

import functools
from typing import Any

from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, mhlo, mpmd, sdy, stablehlo


class _BareContext(ir.Context):
    # What: a context that skips `ir.Context.__init__`. Why internal: that
    # initializer loads every dialect linked into jaxlib; JAX's contexts
    # (`JaxIrContext`) skip it the same way and load only JAX's dialects.
    def __init__(self) -> None:
        super(ir.Context, self).__init__()


@functools.cache
def _upstream_dialects() -> ir.DialectRegistry:
    # What: the upstream MLIR dialects JAX registers (func, arith, shape, ...).
    # Why internal: jaxlib exposes them only through its private extension.
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    return registry


@functools.cache
def _thread_pool() -> ir.ThreadPool:
    return ir.ThreadPool()


def make_context() -> ir.Context:
    """A new context with the dialects of ``jax.interpreters.mlir.make_ir_context``.

    Upstream dialects, Shardy (``sdy``, ``mpmd``), MHLO, CHLO and StableHLO,
    on one thread pool shared by the contexts of this process.
    """
    context = _BareContext()
    context.append_dialect_registry(_upstream_dialects())
    context.load_all_available_dialects()
    context.set_thread_pool(_thread_pool())
    sdy.register_dialect(context)
    mpmd.register_dialect(context)
    mhlo.register_mhlo_dialect(context)
    chlo.register_dialect(context)
    stablehlo.register_dialect(context)
    return context


# What: XLA's portable-artifact reader and writer, which `jax.extend.mlir`
# re-exports. Why internal: they live in jaxlib's private `_jax` extension.
# StableHLO's own writer (`jaxlib.mlir.dialects.stablehlo`) is not the same:
# without mixed serialization, it writes other bytes than XLA's for a module
# with Shardy attributes, or refuses the module.
def deserialize_portable_artifact(blob: bytes, context: ir.Context) -> Any:
    """The ``ir.Module`` of a StableHLO portable artifact, in ``context``."""
    return _jax.mlir.deserialize_portable_artifact(blob, context)


@functools.cache  # fixed for the process's jaxlib
def export_target_version() -> str:
    """The StableHLO version that ``jax.export`` targets with this jaxlib ("4 weeks old").

    jax 0.10.2 targets 1.15.0, 0.11.0 1.16.1, 0.11.2 and 0.12.0.1 1.18.0: writing
    for the same target is what keeps jaxport's module bytes equal to jax.export's.
    """
    requirement = stablehlo.StablehloCompatibilityRequirement.WEEK_4
    return str(stablehlo.get_version_from_compatibility_requirement(requirement))


@functools.cache  # fixed for the process's jaxlib; asked at every deserialize
def newest_readable_version() -> str:
    """The newest StableHLO version this jaxlib deserializes."""
    return str(stablehlo.get_current_version())


def serialize_portable_artifact(module: Any, target_version: str, mixed: bool) -> bytes:
    """``module`` as a portable artifact for ``target_version`` (``mixed``: keep Shardy ops)."""
    return bytes(_jax.mlir.serialize_portable_artifact(module, target_version, mixed))


def operations(module: ir.Module) -> list[ir.Operation]:
    """Every operation of ``module``, itself included, in walk (post-)order.

    ``Operation.walk`` runs in C++ and calls back once per operation, so this is
    linear in the module's size.
    """
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found
