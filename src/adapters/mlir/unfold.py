"""StableHLO's newest operations and JAX's elementwise kernels, unfolded into operations every converter reads.

One rewrite for the runtime targets (:mod:`jaxport.domain.targets.unfolded`
says what and why): ``stablehlo.fma`` becomes a multiply and an add; the
custom calls of JAX's lgamma and digamma kernels become ``chlo.lgamma`` and
``chlo.digamma``, which the writer of a portable artifact decomposes into
elementwise StableHLO (StableHLO's own decomposition: Lanczos' approximation
with the reflection formula, and its derivative); ``stablehlo.exp2`` and
``stablehlo.log2`` stay, and writing the module for a StableHLO older than
1.24 (:data:`~jaxport.domain.artifact.module_format.STABLEHLO_TARGET_VERSION`,
as every module for a converter is written) turns them into ``exp(x * ln 2)``
and ``log(x) / ln 2``, StableHLO's own downgrade. float16 and bfloat16
operands are computed in float32 (as XLA computes them on CPU, and as JAX's
lowering of ``fmuladd`` does for them).

:func:`unfold` rewrites a module in place (IREE's and LiteRT's modules, once
refined, before they are inlined and written: :func:`jaxport.adapters.mlir.specialize.portable`;
for LiteRT, which has no float64 arithmetic, :func:`unfold_float64_functions`
first replaces JAX's own float64 decomposition of a float32 lgamma or digamma);
:func:`unfolded_module` gives a walker (ONNX's) the module written and read
back; :func:`newer_operations` lists what there is to unfold (the verifying
process reports it, for the targets' plans to refuse a dtype first).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo

from jaxport.domain.artifact.module_format import STABLEHLO_TARGET_VERSION
from jaxport.domain.targets.unfolded import ELEMENTWISE_KERNELS, NEWER_OPERATIONS, kernel_operation
from .bindings import deserialize_portable_artifact, operations, serialize_portable_artifact
from .serialization_form import MIXED_SERIALIZATION

_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64"}
_NARROW = ("f16", "bf16")


def _kernel(op: Any) -> str | None:
    """The target of a custom call to one of JAX's elementwise kernels, else None."""
    if op.name != "stablehlo.custom_call":
        return None
    target = ir.StringAttr(op.attributes["call_target_name"]).value
    return target if target in ELEMENTWISE_KERNELS else None


#: The functions of JAX's forward-compatible lowering of lgamma and digamma (``inline=False``).
_JAX_FUNCTION = re.compile(r"(lgamma|digamma)_impl(_\d+)?")


def _jax_function(op: Any) -> str | None:
    """For a call of a function of JAX's lowering of lgamma or digamma on a float32 (or narrower)
    operand (its last; a shape-polymorphic module passes the dimension variables first, as
    integer scalars), the name of the kernel it stands for, else None."""
    if op.name != "func.call" or not op.operands or len(op.results) != 1:
        return None
    found = _JAX_FUNCTION.fullmatch(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
    if found is None or op.operands[-1].type != op.results[0].type or _element(op.results[0]) == "f64":
        return None
    if any(ir.ShapedType(d.type).rank != 0 or _element(d) not in ("i32", "i64") for d in list(op.operands)[:-1]):
        return None
    return f"cpu_{found.group(1)}_ffi"


def _element(value: Any) -> str:
    return str(ir.ShapedType(value.type).element_type)


def newer_operations(ops: Iterable[Any]) -> list[tuple[str, str, str]]:
    """(operation, dtype name, source location) of each of ``ops`` (a module's: :func:`.bindings.operations`)
    that :func:`unfold` rewrites."""
    found = []
    for op in ops:
        kernel = _kernel(op)
        if kernel is None and op.name not in NEWER_OPERATIONS:
            continue
        element = _element(op.results[0])
        found.append((op.name if kernel is None else kernel_operation(kernel), _DTYPES.get(element, element),
                      str(op.location)))
    return found


def unfold(module: ir.Module) -> bool:
    """Rewrites ``module``'s newer operations and elementwise kernels in place (see the module's text).

    Returns:
        Whether ``module`` had any: it then holds CHLO operations or ``exp2``/``log2``, which only
        writing it for :data:`~jaxport.domain.artifact.module_format.STABLEHLO_TARGET_VERSION` turns
        into StableHLO that every converter reads.
    """
    return _rewrite(module, _kernel)


def unfold_float64_functions(module: ir.Module) -> bool:
    """Rewrites in place each call of a function that JAX's forward-compatible lowering of a float32
    (or narrower) lgamma or digamma makes on CPU (``func.call @lgamma_impl``, which computes in
    float64), as :func:`unfold` rewrites the kernel's custom call, for a runtime without float64
    arithmetic (LiteRT). Before JAX's shape refinement, which inlines the function.

    Returns:
        Whether there was any.
    """
    return _rewrite(module, _jax_function)


def _rewrite(module: ir.Module, kernel_of: Callable[[Any], str | None]) -> bool:
    met = False
    with module.context:
        for op in operations(module):
            kernel = kernel_of(op)
            if kernel is None and (kernel_of is _jax_function or op.name not in NEWER_OPERATIONS):
                continue
            met = True
            if op.name in ("stablehlo.exp2", "stablehlo.log2") and _element(op.results[0]) not in _NARROW:
                continue  # the writer's downgrade
            with ir.InsertionPoint(op), op.location:
                result = _unfolded(op, kernel)
            op.results[0].replace_all_uses_with(result)
            op.erase()
    return met


def _unfolded(op: Any, kernel: str | None) -> Any:
    """The value that replaces ``op``'s result (at its place)."""
    operands = list(op.operands)
    if kernel is not None:  # a custom call's shape operands (polymorphic shapes) come after, a function's before
        x = operands[0] if op.name == "stablehlo.custom_call" else operands[-1]
        return chlo.lgamma(x) if ELEMENTWISE_KERNELS[kernel] == "lgamma" else chlo.digamma(x)
    result_type = op.results[0].type
    narrow = _element(op.results[0]) in _NARROW
    if narrow:
        shaped = ir.RankedTensorType(result_type)
        wide = ir.RankedTensorType.get(shaped.shape, ir.F32Type.get())
        operands = [stablehlo.convert(wide, x) for x in operands]
    if op.name == "stablehlo.fma":
        value = stablehlo.add(stablehlo.multiply(operands[0], operands[1]), operands[2])
    elif op.name == "stablehlo.exp2":
        value = stablehlo.exp2(operands[0])  # in float32: the writer's downgrade
    else:
        value = stablehlo.log2(operands[0])
    return stablehlo.convert(result_type, value) if narrow else value


def unfolded_module(module: ir.Module) -> ir.Module:
    """``module`` itself when it has nothing to unfold; else a new module of the same context,
    unfolded and written for :data:`~jaxport.domain.artifact.module_format.STABLEHLO_TARGET_VERSION`
    then read back (``module`` is left rewritten).

    Raises:
        ValueError: the module uses an operation that StableHLO 1.15 cannot express.
    """
    if not unfold(module):
        return module
    try:
        blob = serialize_portable_artifact(module, STABLEHLO_TARGET_VERSION, MIXED_SERIALIZATION)
    except Exception as exc:  # noqa: BLE001 -- the writer says which operation in its own error type
        raise ValueError(f"the module, its newer operations unfolded, cannot be written for StableHLO "
                         f"{STABLEHLO_TARGET_VERSION}: {str(exc)[:600]}") from None
    written: ir.Module = deserialize_portable_artifact(blob, module.context)
    return written
