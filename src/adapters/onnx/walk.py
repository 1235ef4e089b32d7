"""The walk of a StableHLO module into ONNX nodes: blocks in order, one table translation per operation.

``Walker`` maps each MLIR value to its ONNX name, inlines ``func.call``
and composites without a translation of their own, keeps only the chosen
branch of a platform-index ``case``, and looks every other operation up in
:mod:`jaxport.adapters.onnx.ops.table` (``TRANSLATIONS``, ``COMPOSITES``, ``CUSTOM_CALLS``),
refusing one absent from it or of a type ONNX Runtime does not hold. An operation on complex
values (``complex<f32>``, ``complex<f64>``: pairs of floats in the graph) goes to ``COMPLEX_TRANSLATIONS``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jaxlib.mlir import ir

from .builder import GraphBuilder, element_dtype, operation_name
from jaxport.adapters.onnx.ops.complex import complex_part, is_complex
from jaxport.adapters.onnx.ops.table import COMPLEX_TRANSLATIONS, COMPOSITES, CUSTOM_CALLS, TRANSLATIONS


class Walker:
    """Translates blocks in order, mapping each MLIR value to its ONNX name; inlines calls."""

    def __init__(self, builder: GraphBuilder, module: Any) -> None:
        self.builder = builder
        self.functions = {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations
                          if op.operation.name == "func.func"}
        self.values: dict[Any, str] = {}
        builder.run_block = self.run_into

    def run_into(self, builder: GraphBuilder, block: Any, args: Sequence[str]) -> list[str]:
        """Translates ``block`` into ``builder`` (a subgraph's), then returns to the current builder."""
        saved, self.builder = self.builder, builder
        try:
            return self.run_block(block, args)
        finally:
            self.builder = saved

    def run_block(self, block: Any, args: Sequence[str]) -> list[str]:
        """Translates ``block`` with its arguments named ``args``; the names of what it returns."""
        for argument, name in zip(block.arguments, args):
            self.values[argument] = name
        for op in block.operations:
            if op.operation.name in ("func.return", "stablehlo.return"):
                return [self.values[v] for v in op.operands]
            self.builder.current = op
            results = self._translate(op)
            for value, name in zip(op.results, results):
                self.values[value] = name
        raise AssertionError("a block without terminator")  # the verifier rules it out

    def _translate(self, op: Any) -> list[str]:
        b = self.builder
        operands = [self.values[v] for v in op.operands]
        name = op.operation.name
        if name == "func.call":
            return self._inline(op, ir.FlatSymbolRefAttr(op.attributes["callee"]).value, operands)
        if name == "stablehlo.custom_call":
            target = operation_name(op).rpartition("@")[2]
            if target == "shape_assertion":
                return []
            if target == "Sharding":  # a sharding constraint (GSPMD's): the value, on one device
                return operands
            translation = CUSTOM_CALLS.get(target)
            if translation is None:
                b.refuse("custom calls other than shape_assertion have no ONNX translation")
        if name == "stablehlo.case" and operands[0] in b.known:
            # The platform index of a module for several platforms: only the chosen branch runs.
            index = int(b.known[operands[0]])
            regions = list(op.regions)
            branch = regions[index if 0 <= index < len(regions) else -1]
            return self.run_block(branch.blocks[0], [])
        if name == "stablehlo.composite":
            translation = COMPOSITES.get(ir.StringAttr(op.attributes["name"]).value)
            if translation is None:  # its decomposition is what it computes
                return self._inline(op, ir.FlatSymbolRefAttr(op.attributes["decomposition"]).value, operands)
        elif name != "stablehlo.custom_call":
            translation = TRANSLATIONS.get(name)
        values = (*op.operands, *op.results)
        if any(is_complex(v) for v in values):  # (real, imaginary) pairs
            translation = COMPLEX_TRANSLATIONS.get(name) if name != "stablehlo.custom_call" else None
            if translation is None:
                b.refuse(f"complex values are translated (as pairs of floats) only by "
                         f"{', '.join(sorted(n.removeprefix('stablehlo.') for n in COMPLEX_TRANSLATIONS))}")
        if translation is None:
            b.refuse()
        for value in values:
            if complex_part(value) is None and (not isinstance(value.type, ir.RankedTensorType)
                                                or element_dtype(value.type.element_type) is None):
                b.refuse(f"the type {value.type} has no ONNX Runtime translation here")
        return translation(b, op, operands)

    def _inline(self, op: Any, callee: str, operands: list[str]) -> list[str]:
        self.builder.call_sites.append(op)
        try:
            return self.run_block(self.functions[callee].regions[0].blocks[0], operands)
        finally:
            self.builder.call_sites.pop()
