"""jaxport's symbolic dimensions, made traceable by JAX.

JAX duck-types symbolic dimensions: a class with ``dimension_as_value``,
``_get_vars``, ``_evaluate`` and the arithmetic and comparison operators can
stand in a shape. :class:`JaxDim` adds what needs JAX to the pure
:class:`~jaxport.domain.symbolic.DimExpr`: the dimension as a JAX value, the
evaluation over tracers (``max``/``min`` as ``lax`` ops that shape refinement
folds), inconclusive comparisons raised as JAX's own exception type, and
messages that cite JAX's pages where the installed JAX cites them
(:data:`JAX_DOCS`).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import mlir
from jaxlib.mlir.dialects import stablehlo as hlo

from jaxport.domain.symbolic import (
    DimExpr, DimOps, InconclusiveDimensionError, PythonOps
)
from jaxport.domain.jax_docs import DocPages, pages_for
from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.installed import release


class JaxInconclusiveDimensionError(InconclusiveDimensionError, jax_internals.InconclusiveDimensionOperation,
                                    presents_as=InconclusiveDimensionError):
    """An inconclusive comparison, catchable both as jaxport's and as JAX's error.

    It prints as ``jaxport.errors.InconclusiveDimensionError`` and pickles as that class.
    """


def _symbolic_pair(x: Any, y: Any) -> tuple[Any, Any] | None:
    """``(x, y)`` with NumPy integers as ints, when one is symbolic and the other a dimension."""
    if not (isinstance(x, DimExpr) or isinstance(y, DimExpr)):
        return None
    pair = []
    for v in (x, y):
        if isinstance(v, np.integer):
            v = int(v)
        if not isinstance(v, (int, DimExpr)):
            return None
        pair.append(v)
    return pair[0], pair[1]


class JaxDimOps(PythonOps):
    """Python operators (floor semantics also for JAX values), with ``max``/``min`` as JAX ops.

    Constants are strongly typed NumPy integers of the dimension dtype, as
    JAX's own dimensions use, so that lowered modules are the same.
    """

    def constant(self, value: int) -> Any:
        """``value`` as a NumPy integer of the dimension dtype (i32, i64 with x64)."""
        return jax_internals.dim_value_aval().dtype.type(value)

    def max(self, x: Any, y: Any) -> Any:
        """``max(x, y)``: ``stablehlo.maximum`` for JAX values, so refinement folds it."""
        if isinstance(x, int) and isinstance(y, int):
            return super().max(x, y)
        dims = _symbolic_pair(x, y)
        return jnp.maximum(x, y) if dims is None else super().max(*dims)

    def min(self, x: Any, y: Any) -> Any:
        """``min(x, y)``: ``stablehlo.minimum`` for JAX values."""
        if isinstance(x, int) and isinstance(y, int):
            return super().min(x, y)
        dims = _symbolic_pair(x, y)
        return jnp.minimum(x, y) if dims is None else super().min(*dims)


JAX_DIM_OPS = JaxDimOps()
#: The pages of JAX's documentation that the installed JAX cites (JAX 0.12 moved them).
JAX_DOCS: DocPages = pages_for(tuple(int(p) for p in jax.__version__.split(".")[:3] if p.isdigit()))

_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
           "floordiv": operator.floordiv, "mod": operator.mod, "divmod": divmod,
           "truediv": operator.truediv, "pow": operator.pow, "ge": operator.ge,
           "gt": operator.gt, "le": operator.le, "lt": operator.lt}


class JaxDim(DimExpr):
    """A symbolic dimension that JAX can trace with."""

    __slots__ = ()
    inconclusive_error = JaxInconclusiveDimensionError
    docs = JAX_DOCS
    __array_priority__ = 1000  # as JAX's tracers: `ndarray + dim` defers to __radd__

    def dimension_as_value(self) -> Any:
        """The dimension as a JAX integer value (lowered from the dimension variables)."""
        return dim_as_value_p.bind(dim=self)

    def __jax_array__(self) -> Any:
        return self.dimension_as_value()

    def _evaluate(self, env: Mapping[str, Any], ops: DimOps | None = None) -> Any:
        return super()._evaluate(env, JAX_DIM_OPS if ops is None else ops)

    def _nonsymbolic_operand(self, op: str, other: object, *, reflected: bool) -> Any:
        fn = _BINARY[op]
        value = self.dimension_as_value()
        return fn(other, value) if reflected else fn(value, other)


dim_as_value_p = jax_internals.Primitive("jaxport_dim_as_value")
dim_as_value_p.def_abstract_eval(lambda dim: jax_internals.dim_value_aval())


def _dim_as_value_impl(dim: JaxDim) -> Any:
    raise NotImplementedError(
        f"The symbolic dimension '{dim}' has no value outside an export: "
        "use it only inside a function being exported with jaxport.export.")


def _dim_as_value_lowering(ctx: mlir.LoweringRuleContext, *, dim: JaxDim) -> list[Any]:
    result = jax_internals.eval_dynamic_dim(ctx, dim)
    out_type = mlir.aval_to_ir_type(ctx.module_context, ctx.avals_out[0])
    if result.type != out_type:
        result = hlo.convert(out_type, result)
    return [result]


dim_as_value_p.def_impl(_dim_as_value_impl)
mlir.register_lowering(dim_as_value_p, _dim_as_value_lowering)
jax_internals.register_dimension_type(JaxDim)
