"""The values of dimension variables in an ONNX graph, computed from its inputs' shapes.

A module that takes a dimension variable's value as an argument (``tensor<i32>
{jax.global_constant = "b"}``: ``main``'s callees in JAX 0.10, ``main`` itself
since JAX 0.11) gets it from the graph's inputs here, by the same shape plan
that jaxport's wrapped ``main`` and its call front run
(:func:`jaxport.domain.symbolic.run_plan`): ``b`` read from a dimension
``b`` with ``Shape``, ``n`` from a dimension ``2*n + 1`` as ``(dim - 1) // 2``.
The plan's assertions are left out: jaxport's call front checks them
before any runtime sees a call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.calls.front import record_shapes
from jaxport.domain.symbolic import ArgDim, ShapeAssertion, build_plan, run_plan
from .builder import I64, GraphBuilder
from jaxport.adapters.onnx.ops.common import dim_size



class _OnnxDimOps:
    """Dimension arithmetic as ONNX nodes on int64 scalars, with Python's floor division and modulo."""

    def __init__(self, b: GraphBuilder) -> None:
        self.b = b

    def constant(self, value: int) -> str:
        return self.b.scalar(value, I64)

    def add(self, x: str, y: str) -> str:
        return self.b.one("Add", [x, y])

    def mul(self, x: str, y: str) -> str:
        return self.b.one("Mul", [x, y])

    def floordiv(self, x: str, y: str) -> str:
        return self.b.one("Div", [self.b.one("Sub", [x, self.mod(x, y)]), y])  # exact: y divides x - x % y

    def mod(self, x: str, y: str) -> str:
        return self.b.one("Mod", [x, y], fmod=0)  # integer Mod: the sign of the divisor, as Python's %

    def max(self, x: str, y: str) -> str:
        return self.b.one("Max", [x, y])

    def min(self, x: str, y: str) -> str:
        return self.b.one("Min", [x, y])


class _Reader:
    """Reads the inputs' dimensions for the plan; leaves its assertions to the call front."""

    def __init__(self, b: GraphBuilder, input_names: Sequence[str]) -> None:
        self.b = b
        self.input_names = input_names

    def arg_dim(self, source: ArgDim) -> str:
        return self.b.cast(dim_size(self.b, self.input_names[source.arg], source.dim), I64)

    def check(self, assertion: ShapeAssertion, lhs: Any, rhs: Any, values: Callable[[], list[Any]]) -> None:
        del assertion, lhs, rhs, values


def dimension_variables(b: GraphBuilder, record: ArtifactRecord, input_names: Sequence[str]) -> dict[str, str]:
    """Each dimension variable of ``record``'s inputs -> the ONNX name of its value (an int64 scalar).

    Raises:
        ArtifactError: a dimension or constraint of the record does not parse.
        UnsolvableDimensionError: a variable cannot be computed from the inputs' shapes.
    """
    shapes = tuple(tuple(s) for s in record_shapes(record.in_avals, record.constraints))
    plan = build_plan(shapes, tuple(input_names))
    values: dict[str, str] = run_plan(plan, _Reader(b, input_names), _OnnxDimOps(b))
    return values
