"""Symbolic shapes: dimension expressions, scopes, spec parsing, shape solving.

Pure Python. JAX duck-types :class:`DimExpr` as a shape dimension once the
JAX adapter subclasses it (``dimension_as_value``, ``__jax_array__``) and
names its inconclusive error (``DimExpr.inconclusive_error``).

Modules, by reason to change (they form a DAG, counting the imports for type
checking, see tests/unit/test_import_graph.py):

* ``core``: canonical polynomials, ordering and printing (JAX's text), the
  ``floordiv``/``mod`` rules;
* ``decision``: the bounds decision procedure;
* ``expr``: :class:`DimExpr` and ``max``/``min``, the user's :class:`Constraint` records and
  the :class:`Scope` protocol, what an expression asks of its scope; ``dim_max``,
  ``dim_min``... on an int or an expression, for the parser and the solver;
* ``scope``: :class:`SymbolicScope`, which parses the user's constraints, and
  :func:`parse_shape_spec`;
* ``ops``: evaluation over pluggable operations (:class:`DimOps`);
* ``parser``: the grammar, :func:`parse_constraint` (which ``scope`` uses);
* ``plan``: the :class:`ShapePlan` of exported shapes and :func:`build_plan`, which builds it;
* ``solve``: running a plan; the call-side :func:`solve_call`.
* ``clipping``: the constraints that decide a ``min``/``max`` of a variable and a constant,
  named in a note when an export fails on one.
"""

from jaxport.domain.errors import (
    ConstraintError as ConstraintError,
    DimensionEvaluationError as DimensionEvaluationError,
    DimensionPowerError as DimensionPowerError,
    InconclusiveDimensionError as InconclusiveDimensionError,
    ScopeMixingError as ScopeMixingError,
    ShapeAssertionError as ShapeAssertionError,
    ShapeSpecSyntaxError as ShapeSpecSyntaxError,
    ShapeSpecTypeError as ShapeSpecTypeError,
    UnsolvableDimensionError as UnsolvableDimensionError,
)
from .expr import (
    Comparison as Comparison,
    Constraint as Constraint,
    DimExpr as DimExpr,
    DimSize as DimSize,
    Scope as Scope,
)
from .ops import PYTHON_OPS as PYTHON_OPS, DimOps as DimOps, PythonOps as PythonOps
from .parser import parse_constraint as parse_constraint
from .plan import (
    ArgDim as ArgDim,
    PlanValue as PlanValue,
    Remainder as Remainder,
    ShapeAssertion as ShapeAssertion,
    ShapePlan as ShapePlan,
    VarDerivation as VarDerivation,
    build_plan as build_plan,
    format_shape as format_shape,
)
from .scope import SymbolicScope as SymbolicScope, parse_shape_spec as parse_shape_spec
from .expr import (
    dim_max as dim_max,
    dim_min as dim_min,
    is_nonnegative as is_nonnegative,
    is_symbolic_dim as is_symbolic_dim,
)
from .solve import (
    CallSolution as CallSolution,
    PlanHandler as PlanHandler,
    call_output_shapes as call_output_shapes,
    run_plan as run_plan,
    solve_call as solve_call,
)

__all__ = [
    "ArgDim", "CallSolution", "Comparison", "Constraint", "ConstraintError", "DimExpr",
    "DimOps", "DimSize", "DimensionEvaluationError", "DimensionPowerError", "InconclusiveDimensionError",
    "PYTHON_OPS", "PlanHandler", "PlanValue", "PythonOps", "Remainder",
    "Scope", "ScopeMixingError", "ShapeAssertion", "ShapeAssertionError", "ShapePlan",
    "ShapeSpecSyntaxError", "ShapeSpecTypeError", "SymbolicScope", "UnsolvableDimensionError", "VarDerivation",
    "build_plan", "call_output_shapes", "dim_max", "dim_min",
    "format_shape", "is_nonnegative", "is_symbolic_dim", "parse_constraint", "parse_shape_spec",
    "run_plan", "solve_call",
]
