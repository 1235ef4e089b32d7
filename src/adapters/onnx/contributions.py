"""Which weights a quantized ONNX conversion quantizes: each one's measured contribution, and ``auto``'s choice.

Each function's float model is run by ONNX Runtime on its examples (the
caller's calibration, else the source's golden examples' inputs) with the
weights the mode could quantize (:func:`~.quantize.candidates`) as inputs:
fed in float32 they give the reference; fed with one of them rounded as the
mode stores it (:func:`~.quantize.rounded`), the others in float32, that
weight's *contribution*: the largest error of a floating output over its
largest magnitude, as :mod:`jaxport.domain.converted.numerics` measures
(the largest over the functions and examples). The measure holds the
weights' rounding only: the activations that ``int8-dynamic`` and ``int8``
quantize too are not in it.

``keep_float`` patterns keep the weights they match in float. ``auto`` then
keeps, greedily from the largest contribution, the fewest others in float
for every example's outputs to pass the tolerance against the float model:
the measure above finds where to start, and the quantized models themselves
(``build``) decide, one more weight kept at a time (an activation the mode
quantizes adds its error to the weights'). The conversion's own check on
the written files follows, against JAX's outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from jaxport.domain.converted.numerics import Tolerance
from jaxport.domain.converted.quantization import WeightQuantization, kept
from jaxport.domain.ports import HostArray
from .quantize import PREFIX, candidates, inline, rounded


@dataclass(frozen=True, slots=True)
class WeightChoice:
    """The options that decide which weights are quantized."""

    mode: str
    tolerance: Tolerance
    keep_float: tuple[str, ...] = ()
    auto: bool = False


def choose(models: Sequence[onnx.ModelProto], names: Sequence[Sequence[str]],
           examples: Sequence[Sequence[Sequence[HostArray]]], value: Callable[[str], np.ndarray],
           choice: WeightChoice, build: Callable[[frozenset[str]], Sequence[bytes]],
           function: str = "") -> tuple[frozenset[str], tuple[WeightQuantization, ...]]:
    """The weights to keep in float and the report of every weight the mode could quantize.

    Args:
        models: each function's float model (its weights external, ``weights:KEY``).
        names: each function's input names (its arguments', the weights' not among them).
        examples: each function's examples as flat arrays (none: nothing is measured).
        value: a weight's stored array by its key.
        choice: the mode, the tolerance and the caller's choices.
        build: each function's model quantized but for the weights given, self-contained (for ``auto``).
        function: the function named by ONNX Runtime's errors.

    Raises:
        ArtifactCallError: ONNX Runtime refused a model or an example.
    """
    found = [candidates(m, choice.mode) for m in models]
    axes = {k: a for each in found for k, a in each.items()}
    keep = {k for k in axes if kept(k, choice.keep_float)}
    runs = {i: _Runs(m, n, e, value, set(f), function)
            for i, (m, n, e, f) in enumerate(zip(models, names, examples, found)) if e}
    contribution: dict[str, float] = {}
    if runs:
        shaped = {k: rounded(np.asarray(value(k), np.float32), choice.mode, a) for k, a in axes.items()}
        for key in axes:
            contribution[key] = max(r.worst({key: shaped[key]}, choice.tolerance)[0] for r in runs.values())
        if choice.auto:
            order = sorted((k for k in axes if k not in keep), key=lambda k: -contribution[k])
            more = next(n for n in range(len(order) + 1)  # the fewest from the largest contribution down, measured
                        if all(r.worst({k: w for k, w in shaped.items() if k not in keep and k not in order[:n]},
                                       choice.tolerance)[1] for r in runs.values()))
            while more < len(order) and not all(  # the quantized models decide
                    runs[i].passes(model, choice.tolerance, function)
                    for i, model in enumerate(build(frozenset(keep.union(order[:more])))) if i in runs):
                more += 1
            keep.update(order[:more])
    report = tuple(WeightQuantization(k, k not in keep, contribution.get(k)) for k in axes)
    return frozenset(keep), report


class _Runs:
    """One function's float model in ONNX Runtime, its candidate weights as inputs, and its examples."""

    def __init__(self, model: onnx.ModelProto, names: Sequence[str], examples: Sequence[Sequence[HostArray]],
                 value: Callable[[str], np.ndarray], keys: set[str], function: str) -> None:
        from .runtime import reference_session  # ONNX Runtime (another extra) only when measuring

        open_model = onnx.ModelProto()
        open_model.CopyFrom(model)
        graph = open_model.graph
        initializers = []
        for tensor in graph.initializer:
            key = tensor.name.removeprefix(PREFIX)
            if tensor.data_location != onnx.TensorProto.EXTERNAL or not tensor.name.startswith(PREFIX):
                initializers.append(tensor)
            elif key in keys:
                graph.input.append(helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims)))
            else:
                inline(tensor, np.ascontiguousarray(value(key)).tobytes())
                initializers.append(tensor)
        del graph.initializer[:]
        graph.initializer.extend(initializers)
        self.run = reference_session(open_model.SerializeToString(), function)
        self.floats = {f"{PREFIX}{k}": np.asarray(value(k), np.float32) for k in keys}
        self.feeds = [{n: np.asarray(a, np.float32) if np.asarray(a).dtype.name == "bfloat16" else np.asarray(a)
                       for n, a in zip(names, example)} for example in examples]
        self.reference = [self.run({**feed, **self.floats}) for feed in self.feeds]

    def passes(self, model: bytes, tolerance: Tolerance, function: str) -> bool:
        """Whether ``model`` (this function quantized, self-contained) gives every example's floating outputs
        within ``tolerance`` of the float model's."""
        from .runtime import reference_session

        run = reference_session(model, function)
        return all(_compared(run(feed), want, tolerance)[1] for feed, want in zip(self.feeds, self.reference))

    def worst(self, swapped: Mapping[str, np.ndarray], tolerance: Tolerance) -> tuple[float, bool]:
        """The largest relative error of the floating outputs with the weights ``swapped`` (key -> array)
        fed in place of the float32 ones, and whether every output passes ``tolerance``."""
        weights = {**self.floats, **{f"{PREFIX}{k}": w for k, w in swapped.items() if f"{PREFIX}{k}" in self.floats}}
        compared = [_compared(self.run({**feed, **weights}), want, tolerance)
                    for feed, want in zip(self.feeds, self.reference)]
        return max((c[0] for c in compared), default=0.0), all(c[1] for c in compared)


def _compared(got: Sequence[np.ndarray], want: Sequence[np.ndarray], tolerance: Tolerance) -> tuple[float, bool]:
    """The largest relative error of the floating outputs ``got`` against ``want``, and whether each passes."""
    largest, passed = 0.0, True
    for value, ref in zip(got, want):
        if not np.issubdtype(ref.dtype, np.floating):
            continue
        finite = np.isfinite(ref)  # the float model's own NaNs and infinities are not the weights'
        error = float(np.max(np.abs(value - ref), initial=0.0, where=finite))
        scale = float(np.max(np.abs(ref), initial=0.0, where=finite))
        largest = max(largest, error / scale if scale > 0 else (0.0 if error == 0 else np.inf))
        passed = passed and tolerance.allows(error, scale)
    return largest, passed
