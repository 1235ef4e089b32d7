"""The table of ONNX translations: StableHLO (and CHLO) operation name -> translation function.

Each family of operations lives in its own module of this package with its
own ``TABLE`` (and ``COMPLEX``, ``COMPOSITES`` or ``CUSTOM_CALLS`` where it translates those; a module
that only serves the others has none); adding a family is adding a module and its name here. Each
operation name is registered by exactly one module (``merged`` refuses a
second registration). An
operation missing from the table is refused by the translator, by name
and source location. ``func.call``, ``func.return``, ``stablehlo.return``,
``stablehlo.composite`` and ``stablehlo.custom_call`` are the translator's own business (they need
the module, not only the operation); it looks composites up in ``COMPOSITES`` and custom calls in
``CUSTOM_CALLS``. An operation with a complex operand or result is looked up in
``COMPLEX_TRANSLATIONS`` instead (complex values are pairs of floats there). A region of an operation (a loop's body, a branch, a comparator) is translated
by the same walk, through the builder's ``run``.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import (arithmetic, bitcast, bits, complex, control, conv, eigh, elementwise, gather, lapack, linalg, reduce,
               rng, scatter, shape, sort, svd, window)
from .common import Translation


def merged(tables: Mapping[str, Mapping[str, Translation]]) -> dict[str, Translation]:
    """One table of ``tables`` (module name -> its table); a name two modules register is an error.

    Raises ValueError naming the operation and both modules, so that no
    module silently replaces another's translation.
    """
    merged_table: dict[str, Translation] = {}
    owner: dict[str, str] = {}
    for module, table in tables.items():
        for name, translation in table.items():
            if name in owner:
                raise ValueError(f"{name} is registered by both {owner[name]} and {module}")
            owner[name] = module
            merged_table[name] = translation
    return merged_table


TRANSLATIONS: Mapping[str, Translation] = merged({
    module.__name__: module.TABLE for module in (
        elementwise, arithmetic, bitcast, bits, shape, linalg, reduce, gather, window, conv, scatter, sort,
        control, rng)})

#: Operations with a complex operand or result -> translation on (real, imaginary) pairs
#: (:mod:`.complex`); the walk refuses any other operation on complex values.
COMPLEX_TRANSLATIONS: Mapping[str, Translation] = complex.COMPLEX

#: ``stablehlo.composite`` name -> translation; a composite not listed is its decomposition, inlined.
COMPOSITES: Mapping[str, Translation] = merged({
    module.__name__: module.COMPOSITES for module in (elementwise, sort)})

#: ``stablehlo.custom_call`` target -> translation (``shape_assertion`` and ``Sharding`` are the walk's own).
CUSTOM_CALLS: Mapping[str, Translation] = {**window.CUSTOM_CALLS, **lapack.CUSTOM_CALLS, **svd.CUSTOM_CALLS,
                                              **eigh.CUSTOM_CALLS}
