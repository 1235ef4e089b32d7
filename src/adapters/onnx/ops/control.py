"""ONNX translations of ``while`` (``Loop``), ``case`` and ``if`` (``If``) and ``optimization_barrier``.

A region becomes an ONNX subgraph translated by the same walk (values of
the enclosing graph are read by name, as ONNX lets a subgraph do). A
``while`` is a ``Loop`` without trip count whose condition input is the
condition region on the initial values, and whose body computes the body
region and then the condition region on its results. A ``case`` is a chain
of ``If``s on ``index == k``; an index out of range takes the last branch,
as StableHLO says. ``optimization_barrier`` is an ``Identity`` per operand
(ONNX Runtime has no reordering across it to prevent that matters for
results).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import onnx
from onnx import helper

from jaxport.adapters.onnx.builder import I64, GraphBuilder, onnx_type, tensor_dtype, tensor_shape
from .common import Translation


def value_info(name: str, value: Any) -> onnx.ValueInfoProto:
    """The ONNX type of an MLIR tensor value, dynamic dimensions left unknown."""
    return helper.make_tensor_value_info(name, onnx_type(tensor_dtype(value)), list(tensor_shape(value)))


def _branch(b: GraphBuilder, values: Sequence[Any], name: str,
            build: Callable[[GraphBuilder], list[str]]) -> onnx.GraphProto:
    """A subgraph that ``build`` writes into a child of ``b``; its outputs are ``build``'s results (typed as
    ``values``), each through an ``Identity`` of its own (outer names too)."""
    child = b.child()
    outputs = [value_info(child.one("Identity", [r]), v) for r, v in zip(build(child), values)]
    return helper.make_graph(child.nodes, b.fresh(name), [], outputs)


def _while(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    cond_block, body_block = op.regions[0].blocks[0], op.regions[1].blocks[0]
    first = b.run(cond_block, args)[0]

    def body(c: GraphBuilder, _: str, carried: list[str]) -> list[str]:
        results = c.run(body_block, carried)
        return [c.run(cond_block, results)[0], *results]

    return b.loop("", list(zip(args, op.operands)), body, go=first)


def _if(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    results, regions = list(op.results), list(op.regions)
    return b.node("If", [args[0]], len(results),
                  then_branch=_branch(b, results, "then", lambda c: c.run(regions[0].blocks[0], [])),
                  else_branch=_branch(b, results, "else", lambda c: c.run(regions[1].blocks[0], [])))


def _case(b: GraphBuilder, op: Any, args: Sequence[str]) -> list[str]:
    results = list(op.results)
    regions = list(op.regions)
    index = b.as_int64(args[0], op.operands[0])
    if len(regions) == 1:
        child_results = b.run(regions[0].blocks[0], [])
        return [b.one("Identity", [r]) for r in child_results]

    def chain(builder: GraphBuilder, k: int) -> list[str]:
        """Branch k if index == k, else the chain from k + 1 (the last branch for every other index)."""
        if k == len(regions) - 1:
            return builder.run(regions[k].blocks[0], [])
        rest = _branch(b, results, "case_else", lambda c: chain(c, k + 1))
        is_k = builder.one("Equal", [index, builder.scalar(k, I64)])
        return builder.node("If", [is_k], len(results), else_branch=rest,
                            then_branch=_branch(b, results, "case", lambda c: c.run(regions[k].blocks[0], [])))

    return chain(b, 0)


TABLE: dict[str, Translation] = {
    "stablehlo.while": _while,
    "stablehlo.if": _if,
    "stablehlo.case": _case,
    "stablehlo.optimization_barrier": lambda b, op, args: [b.one("Identity", [a]) for a in args],
}

