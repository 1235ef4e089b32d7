"""The table of ONNX translations: StableHLO (and CHLO) operation name -> translation function.

Each family of operations lives in its own ``onnx_ops_*`` module with its
own ``TABLE``; adding a family is adding a module and one line here. An
operation missing from the table is refused by the translator, by name
and source location. ``func.call``, ``func.return``, ``stablehlo.return``,
``stablehlo.composite`` and ``stablehlo.custom_call`` are the translator's own business (they need
the module, not only the operation); it looks composites up in ``COMPOSITES`` and custom calls in
``CUSTOM_CALLS``. A region of an operation (a loop's body, a branch, a comparator) is translated
by the same walk, through the builder's ``run_block``.
"""

from __future__ import annotations

from collections.abc import Mapping

from . import onnx_ops_elementwise, onnx_ops_gather, onnx_ops_linalg, onnx_ops_shape
from . import onnx_ops_control, onnx_ops_conv, onnx_ops_dynamic, onnx_ops_math, onnx_ops_scatter, onnx_ops_sort
from . import onnx_ops_bits, onnx_ops_pool, onnx_ops_window
from .onnx_ops_elementwise import Translation

TRANSLATIONS: Mapping[str, Translation] = {
    **onnx_ops_elementwise.TABLE,
    **onnx_ops_shape.TABLE,
    **onnx_ops_linalg.TABLE,
    **onnx_ops_gather.TABLE,
    **onnx_ops_window.TABLE,
    **onnx_ops_pool.TABLE,
    **onnx_ops_conv.TABLE,
    **onnx_ops_scatter.TABLE,
    **onnx_ops_dynamic.TABLE,
    **onnx_ops_sort.TABLE,
    **onnx_ops_control.TABLE,
    # last: its entries replace the ones above with XLA's edge semantics (integer division, NaN, total order)
    **onnx_ops_math.TABLE,
    **onnx_ops_bits.TABLE,
}

#: ``stablehlo.composite`` name -> translation; a composite not listed is its decomposition, inlined.
COMPOSITES: Mapping[str, Translation] = {
    **onnx_ops_elementwise.COMPOSITES,
    **onnx_ops_sort.COMPOSITES,
}

#: ``stablehlo.custom_call`` target -> translation (``shape_assertion`` and ``Sharding`` are the walk's own).
CUSTOM_CALLS: Mapping[str, Translation] = {
    **onnx_ops_pool.CUSTOM_CALLS,
}
