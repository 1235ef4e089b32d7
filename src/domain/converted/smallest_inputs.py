"""The smallest inputs of one variant of a converted function: what the verifying child calls it on.

The verifying child (:mod:`jaxport.application.conversion.verify_child`)
calls every variant of every function: on the golden examples that reach it
(:func:`examined_variants`), else on zeros of the inputs
:func:`smallest_inputs` gives: each flat
input's dtype, and its shape with the variant's binding for the dimension
variables it binds and every other variable at the smallest value the
function's constraints allow (``b >= 16``: 16; no constraint: 1). The
smallest values are the decision procedure's lower bounds; where the call
front refuses them (a constraint the bounds do not capture, as
``mod(b, 4) == 0``), larger values are tried, the smallest total first, up
to :data:`SEARCH_BUDGET` candidates. The front (:func:`~jaxport.domain.calls.front.check_call`)
accepts every shape given: the constraints, the shape assertions, the dtypes.

A variant for which no such inputs are found is refused with an
:class:`~jaxport.domain.errors.ArtifactError` naming the function and the
front's reason (the child adds the variant's file), never skipped.

>>> from jaxport.domain.artifact.record import AvalRecord, DType, TreeSpec
>>> from jaxport.domain.calls.signature import Signature
>>> from jaxport.domain.converted.manifest import ConvertedFunction, Variant
>>> leaf = TreeSpec.leaf()
>>> sig = Signature("f", TreeSpec.of_tuple(TreeSpec.of_tuple(leaf), TreeSpec.of_dict({})),
...                 (AvalRecord(("b", "4"), DType.FLOAT32),), leaf, (AvalRecord(("b",), DType.FLOAT32),),
...                 ("b >= 16",))
>>> variant = Variant("f.onnx")
>>> [(one[0].shape, one[0].dtype) for one in smallest_inputs(ConvertedFunction(sig, (variant,)), variant, count=2)]
[((16, 4), 'float32'), ((17, 4), 'float32')]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from jaxport.domain.calls.front import check_call, record_shapes
from jaxport.domain.errors import ArtifactError
from jaxport.domain.specs import ArraySpec
from jaxport.domain.symbolic.plan import Shape
from jaxport.domain.symbolic import DimExpr
from jaxport.domain.bundle.manifest import Example
from .manifest import ConvertedFunction, Variant

#: The most candidate values of the free dimension variables tried before a variant is refused.
SEARCH_BUDGET: Final = 512


def smallest_inputs(function: ConvertedFunction, variant: Variant, count: int = 1
                    ) -> tuple[tuple[ArraySpec, ...], ...]:
    """The shape and dtype of each flat input of the smallest calls of ``variant``, smallest first
    (see the module's text): ``count`` of them at most, one where the variant leaves no variable free.

    Raises:
        ArtifactError: no inputs fit the variant (no values of its free dimension variables
            satisfy the constraints within :data:`SEARCH_BUDGET` tries), or a shape or a
            constraint does not parse; the message names the function.
    """
    sig = function.signature
    dtypes = [aval.dtype.value for aval in sig.in_avals]
    try:
        shapes = record_shapes(sig.in_avals, sig.constraints)
    except ArtifactError as exc:
        raise ArtifactError(f"{sig.name!r} has no inputs: {exc}") from None
    binding = variant.binding
    found: list[tuple[ArraySpec, ...]] = []
    refusal = ""
    for env in itertools.islice(_candidates(_lower_bounds(shapes, binding)), SEARCH_BUDGET):
        env.update(binding)
        try:
            specs = tuple(ArraySpec(_concrete(shape, env), dtype) for shape, dtype in zip(shapes, dtypes))
            if any(d < 0 for s in specs for d in s.shape):
                refusal = refusal or f"at {_named(env)}, a dimension is negative"
                continue
            check_call(sig, specs)
        except (ValueError, ArithmeticError) as exc:  # the front's errors (JaxportError), an evaluation's
            refusal = refusal or f"at {_named(env)}: {exc}"
            continue
        found.append(specs)
        if len(found) == count:
            break
    if not found:
        raise ArtifactError(f"no inputs of {sig.name!r} fit its constraints {list(sig.constraints)}: "
                            f"{refusal} (nor larger values: {SEARCH_BUDGET} tried at most)")
    return tuple(found)


def examined_variants(functions: Sequence[ConvertedFunction], examples: Sequence[Example]
                      ) -> frozenset[tuple[str, str]]:
    """The variants that the golden ``examples`` call, as (function, file) pairs: each example's
    shapes checked by the call front, its variant chosen as a call of them chooses it. An example
    that fits no variant (or no function) calls none.
    """
    by_name = {f.name: f for f in functions}
    found: set[tuple[str, str]] = set()
    for example in examples:
        function = by_name.get(example.function)
        if function is None:
            continue
        try:
            dims = check_call(function.signature, [ArraySpec(tuple(r.shape), r.dtype) for r in example.inputs])
            found.add((function.name, function.variant_for(dims).file))
        except ValueError:  # the front's errors (JaxportError), UncompiledSizeError among them
            continue
    return frozenset(found)


def _lower_bounds(shapes: Sequence[Shape], binding: Mapping[str, int]) -> dict[str, int]:
    """Each dimension variable of ``shapes`` that ``binding`` leaves free -> its smallest value
    by the decision procedure (at least 1)."""
    lows: dict[str, int] = {}
    for shape in shapes:
        for dim in shape:
            if not isinstance(dim, DimExpr):
                continue
            for name in sorted(dim._get_vars() - set(binding) - set(lows)):
                variable = DimExpr.variable(name, dim.scope)
                low = variable.bounds()[0] if isinstance(variable, DimExpr) else variable
                lows[name] = max(1, math.ceil(low)) if math.isfinite(low) else 1
    return lows


def _candidates(lows: Mapping[str, int]) -> Iterator[dict[str, int]]:
    """The free variables' values: the lower bounds, then each larger by a total of 1, 2, ..."""
    names = sorted(lows)
    for total in itertools.count():
        for increments in _compositions(total, len(names)):
            yield {name: lows[name] + step for name, step in zip(names, increments)}
        if not names:
            return


def _compositions(total: int, parts: int) -> Iterator[tuple[int, ...]]:
    """Every tuple of ``parts`` non-negative ints that sum to ``total``."""
    if parts == 0:
        if total == 0:
            yield ()
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first, *rest)


def _concrete(shape: Shape, env: Mapping[str, int]) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else int(d._evaluate(env)) for d in shape)


def _named(env: Mapping[str, int]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(env.items())) or "the static shapes"
