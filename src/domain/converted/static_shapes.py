"""The static shapes of a function for each binding of its dimension variables, for targets that
compile static shapes only (``TargetPlan.needs_bindings``: IREE, and the next ones).

A symbolic function is compiled once per binding of its dimension variables
that the user names (``dims=``), each binding checked against the
function's constraints as a call of those shapes would be; a
multi-platform artifact is compiled from its CPU branch (:func:`platform_index`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.errors import ConversionError
from jaxport.domain.calls.front import dimension_variables, leaf_paths, record_shapes, with_weights_bound
from jaxport.domain.symbolic import DimExpr, ShapeAssertionError, solve_call

@dataclass(frozen=True, slots=True)
class StaticShapes:
    """One binding of a function's dimension variables and the static shapes it gives.

    Attributes:
        dims: the variables' values, sorted by name (empty for a static function).
        in_shapes: one shape per flat input of the function (its weights included).
        out_shapes: one shape per flat output.
    """

    dims: tuple[tuple[str, int], ...]
    in_shapes: tuple[tuple[int, ...], ...]
    out_shapes: tuple[tuple[int, ...], ...]


def static_shapes(name: str, record: ArtifactRecord, bindings: Sequence[Mapping[str, int]] | None,
                  *, nr_weights: int = 0, runtime: str) -> list[StaticShapes]:
    """The static shapes to compile ``record`` for: one per binding (one, unbound, when static).

    Each binding is checked as a call of those shapes would be: the dimension
    variables solved from the input shapes it gives and every constraint
    checked, the messages naming the caller's arguments (the ``nr_weights``
    first flat inputs, a bundle's weights, are bound).

    Raises:
        ConversionError: a symbolic function without bindings, a static one
            with some, a binding that names other variables than the
            function's, gives a value that is not a size, repeats another,
            or violates the function's constraints.
    """
    variables = dimension_variables(record.signature)
    if not variables:
        if bindings:
            raise ConversionError(runtime, name, "it has no dimension variables; give it no dims")
        return [_shapes(record, {}, nr_weights)]
    if not bindings:
        raise ConversionError(
            runtime, name, f"it has symbolic shapes (dimension variables {', '.join(variables)}) and "
            f"{runtime} compiles static shapes only: give the sizes to compile for, as {dims_advice(name, variables)}.")
    found: list[StaticShapes] = []
    for binding in bindings:
        shapes = _checked_binding(name, record, variables, binding, nr_weights, runtime)
        if any(s.dims == shapes.dims for s in found):
            raise ConversionError(runtime, name, f"the binding {dict(binding)} is given twice")
        found.append(shapes)
    return found


def dims_advice(name: str, variables: Sequence[str]) -> str:
    """How to give function ``name`` sizes for its dimension ``variables``: ``dims={'f': [{'b': 8}, ...]}
    (on the command line --dims f:b=8)``."""
    return (f"dims={{'{name}': [{{{', '.join(repr(v) + ': 8' for v in variables)}}}, ...]}} (on the command line "
            f"--dims {name}:{','.join(v + '=8' for v in variables)})")


def _checked_binding(name: str, record: ArtifactRecord, variables: tuple[str, ...],
                     binding: Mapping[str, int], nr_weights: int, runtime: str) -> StaticShapes:
    given = dict(binding)
    if set(given) != set(variables):
        extra, lacking = sorted(set(given) - set(variables)), sorted(set(variables) - set(given))
        what = (f"names {', '.join(extra)}, which {'is' if len(extra) == 1 else 'are'} not among"
                if extra else f"lacks {', '.join(lacking)}, one of")
        raise ConversionError(runtime, name, f"the binding {given} {what} its dimension variables "
                                             f"({', '.join(variables)})")
    for var, value in given.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConversionError(runtime, name, f"the binding {given} gives {var} the value "
                                                 f"{value!r}, which is not a size")
    try:
        return _shapes(record, given, nr_weights)
    except ShapeAssertionError as exc:
        raise ConversionError(runtime, name, f"the binding {given} violates its shape constraints: "
                                             f"{exc}") from exc


def _shapes(record: ArtifactRecord, binding: dict[str, int], nr_weights: int) -> StaticShapes:
    exported = record_shapes(record.in_avals, record.constraints)
    concrete = [tuple(int(d._evaluate(binding)) if isinstance(d, DimExpr) else d for d in shape) for shape in exported]
    callers = with_weights_bound(record.signature, nr_weights)
    paths = [f"weights[{i}]" for i in range(nr_weights)] + list(leaf_paths(callers.in_tree))
    solution = solve_call(exported, concrete, paths)
    outs = record_shapes(record.out_avals, record.constraints)
    return StaticShapes(tuple(sorted(binding.items())), tuple(concrete),
                        tuple(tuple(int(solution.evaluate(d)) for d in s) for s in outs))


def variant_file(function: str, dims: Mapping[str, int], suffix: str) -> str:
    """The file name of ``function``'s variant for ``dims`` (none: a dynamic or static one).

    Function names hold no ``=``, so the names of two bindings never meet.

    >>> variant_file("predict", {"t": 16, "b": 1}, ".vmfb"), variant_file("f", {}, ".tflite")
    ('predict.b=1,t=16.vmfb', 'f.tflite')
    """
    if not dims:
        return f"{function}{suffix}"
    return f"{function}." + ",".join(f"{k}={v}" for k, v in sorted(dims.items())) + suffix


def platform_index(record: ArtifactRecord) -> int | None:
    """The index of the CPU branch in a multi-platform module's ``main`` (None for one platform)."""
    return record.platforms.index("cpu") if len(record.platforms) > 1 else None
