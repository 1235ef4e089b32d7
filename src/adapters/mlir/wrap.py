"""Emitting the wrapped ``main`` of a shape-polymorphic module from the domain's plan.

The lowered module's ``main`` takes ``(platform_index?, dim_vars..., tokens...,
arrays...)``. The calling convention wants ``main(platform_index?, tokens...,
arrays...)``: this adapter renames the lowered ``main`` to a private function
and adds a new ``main`` that computes each dimension variable from the
argument dimensions, emits a ``shape_assertion`` custom call for each check of
the plan, and calls the original. What to compute and check is decided by the
domain (:class:`~jaxport.domain.symbolic.ShapePlan`); this module only emits it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax.extend.mlir import ir, passmanager
from jax.extend.mlir.dialects import func as func_dialect
from jax.extend.mlir.dialects import stablehlo as hlo
from jax.interpreters import mlir

from jaxport.domain.symbolic import ArgDim, Comparison, ShapeAssertion, ShapePlan, run_plan

WRAPPED_MAIN = "_wrapped_jax_export_main"
# The MLIR bindings' stubs type IR values loosely; so do we.
Value = Any


def _constant(value: int) -> Value:
    return mlir.ir_constant(np.int32(value))


def _compare(x: Value, y: Value, direction: str) -> Value:
    return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                       compare_type=hlo.ComparisonTypeAttr.get("SIGNED"))


def _named(name: str) -> ir.Location:
    # JAX names the location of each op after the primitive it lowers; the
    # wrapper uses the same names so that its module is byte-identical.
    return ir.Location.name(name)


@dataclass(frozen=True, slots=True)
class IrDim:
    """A dimension value in the wrapper: an IR value and whether JAX would type it weakly.

    Argument sizes are weakly typed and constants are not; arithmetic that mixes
    the two converts the weak operand first, as JAX's type promotion does, so
    that the emitted ops are those ``jax.export`` emits.
    """

    value: Value
    weak: bool


class IrDimOps:
    """Dimension arithmetic as StableHLO ops on ``tensor<i32>`` values."""

    def constant(self, value: int) -> IrDim:
        """A constant ``tensor<i32>``."""
        return IrDim(_constant(value), weak=False)

    def _promoted(self, x: IrDim, y: IrDim) -> tuple[Value, Value, bool]:
        if x.weak == y.weak:
            return x.value, y.value, x.weak
        with _named("convert_element_type"):
            if x.weak:
                return hlo.convert(x.value.type, x.value), y.value, False
            return x.value, hlo.convert(y.value.type, y.value), False

    def _binary(self, name: str, op: Callable[[Value, Value], Value], x: IrDim, y: IrDim) -> IrDim:
        a, b, weak = self._promoted(x, y)
        with _named(name):
            return IrDim(op(a, b), weak)

    def add(self, x: IrDim, y: IrDim) -> IrDim:
        """``x + y``."""
        return self._binary("add", hlo.add, x, y)

    def mul(self, x: IrDim, y: IrDim) -> IrDim:
        """``x * y``."""
        return self._binary("mul", hlo.multiply, x, y)

    def _divmod(self, x: IrDim, y: IrDim) -> tuple[IrDim, IrDim]:
        # stablehlo.divide truncates; adjust to Python's floor semantics.
        a, b, weak = self._promoted(x, y)
        q, r = hlo.divide(a, b), hlo.remainder(a, b)
        zero = _constant(0)
        signs_differ = _compare(_compare(r, zero, "LT"), _compare(b, zero, "LT"), "NE")
        adjust = hlo.and_(_compare(r, zero, "NE"), signs_differ)
        q = hlo.select(adjust, hlo.subtract(q, _constant(1)), q)
        r = hlo.select(adjust, hlo.add(r, b), r)
        return IrDim(q, weak), IrDim(r, weak)

    def floordiv(self, x: IrDim, y: IrDim) -> IrDim:
        """``x // y`` with floor semantics."""
        return self._divmod(x, y)[0]

    def mod(self, x: IrDim, y: IrDim) -> IrDim:
        """``x % y`` with floor semantics."""
        return self._divmod(x, y)[1]

    def max(self, x: IrDim, y: IrDim) -> IrDim:
        """``stablehlo.maximum``, which shape refinement folds."""
        return self._binary("max", hlo.maximum, x, y)

    def min(self, x: IrDim, y: IrDim) -> IrDim:
        """``stablehlo.minimum``."""
        return self._binary("min", hlo.minimum, x, y)


class _Emitter:
    """Reads argument dimensions and emits assertions inside the new ``main``."""

    def __init__(self, arrays: list[Value], position_of: Callable[[int], int], assertions: bool) -> None:
        self.arrays = arrays
        self.position_of = position_of
        self.assertions = assertions
        self.sizes: dict[ArgDim, IrDim] = {}

    def arg_dim(self, source: ArgDim) -> IrDim:
        if source not in self.sizes:
            array = self.arrays[self.position_of(source.arg)]
            with _named("dimension_size"):
                self.sizes[source] = IrDim(hlo.get_dimension_size(array, source.dim), weak=True)
        return self.sizes[source]

    def check(self, assertion: ShapeAssertion, lhs: IrDim, rhs: IrDim,
              values: Callable[[], list[Any]]) -> None:
        if not self.assertions:
            return
        direction = "GE" if assertion.comparison is Comparison.GE else "EQ"
        with _named(direction.lower()):
            predicate = _compare(lhs.value, rhs.value, direction)
        inputs = [v.value for v in values()]
        with _named("shape_assertion"):
            op = hlo.CustomCallOp([], [predicate, *inputs], "shape_assertion", has_side_effect=True,
                                  api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2))
        op.attributes["error_message"] = ir.StringAttr.get(assertion.message)


def copy_module(module: Any) -> Any:
    """A copy of ``module`` in a fresh context, safe to change (JAX caches the original)."""
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    context = mlir.make_ir_context()
    with context:
        return ir.Module.parse(buffer.getvalue())


def wrap_main(module: Any, *, plan: ShapePlan, dim_vars: tuple[str, ...],
              has_platform_index: bool, nr_tokens: int, kept_var_idx: tuple[int, ...],
              shape_assertions: bool, symbolic_dims: tuple[ArgDim, ...] = ()) -> Any:
    """A copy of ``module`` whose ``main`` computes its dimension variables itself.

    Args:
        module: the lowered module (left unchanged).
        plan: how to compute ``dim_vars`` from argument dimensions and what to check.
        dim_vars: the dimension variables the lowered ``main`` takes, in order.
        has_platform_index: whether ``main`` takes a platform index first.
        nr_tokens: the number of token arguments (ordered effects).
        kept_var_idx: the flat arguments that ``main`` takes.
        shape_assertions: whether to emit the plan's assertions.
        symbolic_dims: the argument dimensions whose sizes ``main`` reads
            first, in this order (JAX reads every symbolic one up front).
    """
    wrapped = copy_module(module)
    with wrapped.context, ir.Location.unknown():
        symbols = ir.SymbolTable(wrapped.operation)
        original = symbols["main"]
        original.attributes["sym_visibility"] = ir.StringAttr.get("private")
        symbols.set_symbol_name(original, WRAPPED_MAIN)
        # A module that calls another export already holds a WRAPPED_MAIN (the
        # callee's): re-inserting renames ours uniquely, as jax.export does.
        wrapped_name = ir.StringAttr(symbols.insert(original)).value
        _add_main(wrapped, original, wrapped_name, plan, dim_vars, has_platform_index,
                  nr_tokens, kept_var_idx, shape_assertions, symbolic_dims)
        if len(wrapped.body.operations) > 2:
            # symbol-dce walks every op of a large module; with only the new main
            # and the original it calls, there is nothing for it to remove.
            passmanager.PassManager.parse("builtin.module(symbol-dce)").run(wrapped.operation)
    return wrapped


def _add_main(wrapped: Any, original: Any, wrapped_name: str, plan: ShapePlan,
              dim_vars: tuple[str, ...],
              has_platform_index: bool, nr_tokens: int, kept_var_idx: tuple[int, ...],
              shape_assertions: bool, symbolic_dims: tuple[ArgDim, ...]) -> None:
    ftype = ir.FunctionType(ir.TypeAttr(original.attributes["function_type"]).value)
    inputs, results = list(ftype.inputs), list(ftype.results)
    nr_platform = int(has_platform_index)
    nr_dims = len(dim_vars)
    keep = [*range(nr_platform), *range(nr_platform + nr_dims, len(inputs))]
    main: Any = func_dialect.FuncOp("main", ir.FunctionType.get([inputs[i] for i in keep], results),
                                    ip=ir.InsertionPoint.at_block_begin(wrapped.body))
    main.attributes["sym_visibility"] = ir.StringAttr.get("public")
    if "arg_attrs" in original.attributes:
        arg_attrs = list(ir.ArrayAttr(original.attributes["arg_attrs"]))
        main.arg_attrs = ir.ArrayAttr.get([arg_attrs[i] for i in keep])
    if "res_attrs" in original.attributes:
        main.result_attrs = original.attributes["res_attrs"]
    block = main.add_entry_block()
    with ir.InsertionPoint(block):
        args = list(block.arguments)
        arrays = args[nr_platform + nr_tokens:]
        position = {flat: i for i, flat in enumerate(kept_var_idx)}

        def position_of(flat: int) -> int:
            if flat not in position:
                raise ValueError(f"argument {flat} was dropped but a dimension variable is read from it")
            return position[flat]

        emitter = _Emitter(arrays, position_of, shape_assertions)
        for source in symbolic_dims:
            emitter.arg_dim(source)
        values = run_plan(plan, emitter, IrDimOps())
        operands = list(args[:nr_platform])
        dim_types = inputs[nr_platform:nr_platform + nr_dims]
        operands += [converted(values[v].value, t) for v, t in zip(dim_vars, dim_types)]
        operands += args[nr_platform:]
        call = func_dialect.CallOp(results, ir.FlatSymbolRefAttr.get(wrapped_name), operands)
        func_dialect.ReturnOp(list(call.results))


def converted(value: Value, to_type: ir.Type) -> Value:
    """``value`` as ``to_type``: itself, or a ``stablehlo.convert`` of it."""
    return value if value.type == to_type else hlo.convert(to_type, value)
