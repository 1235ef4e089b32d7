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
    ConstraintError, DimensionEvaluationError, DimensionPowerError, InconclusiveDimensionError, ScopeMixingError,
    ShapeAssertionError, ShapeSpecSyntaxError, ShapeSpecTypeError, UnsolvableDimensionError,
)
from .expr import Comparison, Constraint, DimExpr, DimSize, Scope, dim_max, dim_min, is_nonnegative, is_symbolic_dim
from .ops import PYTHON_OPS, DimOps, PythonOps
from .parser import parse_constraint
from .plan import ArgDim, PlanValue, Remainder, ShapeAssertion, ShapePlan, VarDerivation, build_plan, format_shape
from .scope import SymbolicScope, parse_shape_spec
from .solve import CallSolution, PlanHandler, call_output_shapes, run_plan, solve_call

# The names of __all__ are the package's re-exports (for mypy too: no "X as X" restates them).
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
