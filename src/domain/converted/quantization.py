"""Reduced precision: the modes a conversion quantizes with, each one's documented tolerance, and its record.

A target offers some of :data:`MODES` (its options' ``quantize``; a mode it
lacks is a ``UsageError``). Each mode has one documented tolerance,
normwise as :mod:`jaxport.domain.converted.numerics` compares (``err <= atol +
rtol * ref``, ``ref`` the output's largest magnitude): the conversion runs the
golden examples on the quantized model and refuses it when an output misses
it, and the directory's manifest records the mode and the tolerance
(``"quantization"``, written only when a mode is set, so that a float32
directory's manifest is as before), which ``jaxport check --numerics`` uses.

* ``int8-weights``: the weights of matrix products and embedding gathers as
  int8, one scale per output channel (an embedding's row where it is
  gathered); activations float32. Rounding a weight to one of 255 levels per
  channel is measured at 0.5-3% of the output's magnitude through two to six
  layers.
* ``int8-dynamic``: those int8 weights, and each product's activations
  quantized on the fly, per call (ONNX Runtime's ``quantize_dynamic``,
  ai-edge-quantizer's dynamic-range recipe): about twice as fast as float32 on
  a CPU, at 1.0-1.8x ``int8-weights``' error.
* ``int4-weights``: those weights as int4 in blocks of 32 along the
  reduction, one scale per block (16 levels): measured at 4-12%.
* ``int8``: static quantization, weights and activations of matrix products
  (and convolutions) as int8, calibrated on examples; the rest float32.
* ``float16``: every float32 constant stored as float16 (11 significant bits).

The caller may replace a mode's tolerance for one conversion (``tolerance=``,
``convert --tolerance RTOL[,ATOL]``: :func:`parse_tolerance`), keep weights in
float by their paths in the bundle (``keep_float=``, glob patterns:
:func:`check_keep_float`), or have the converter find the fewest to keep
(``auto=True``). The record then holds the tolerance given, and each weight
that could be quantized with its measured contribution (:class:`WeightQuantization`).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from jaxport.domain.errors import ArtifactError, UsageError
from .numerics import Tolerance

INT8_WEIGHTS, INT4_WEIGHTS, INT8, FLOAT16 = "int8-weights", "int4-weights", "int8", "float16"
INT8_DYNAMIC = "int8-dynamic"

#: Each mode's documented tolerance of the floating outputs against JAX's float32 ones.
MODES: Mapping[str, Tolerance] = MappingProxyType({
    INT8_WEIGHTS: Tolerance(rtol=0.05, atol=1e-6),
    INT8_DYNAMIC: Tolerance(rtol=0.10, atol=1e-6),
    INT4_WEIGHTS: Tolerance(rtol=0.25, atol=1e-6),
    INT8: Tolerance(rtol=0.15, atol=1e-6),
    FLOAT16: Tolerance(rtol=0.01, atol=1e-6),
})
#: The modes that need calibration examples (the caller's, or the source's golden examples).
CALIBRATED = frozenset({INT8})


@dataclass(frozen=True, slots=True)
class WeightQuantization:
    """One weight a mode could quantize: whether it was, and its measured contribution.

    Attributes:
        key: its path in the bundle (``blocks/0/attn/qkv``).
        quantized: False where it was kept in float (``keep_float``, ``auto``).
        contribution: the largest error of the outputs, over the largest
            magnitude (as :mod:`.numerics` compares), of the golden examples run
            with this weight alone quantized, against the float model; None
            where there were no examples to measure it on.
    """

    key: str
    quantized: bool
    contribution: float | None = None

    def to_json(self) -> dict[str, Any]:
        """``{"key": ..., "quantized": ..., "contribution": ...}``."""
        return {"key": self.key, "quantized": self.quantized, "contribution": self.contribution}

    @staticmethod
    def from_json(doc: Any, where: str) -> WeightQuantization:
        """The record :meth:`to_json` wrote.

        Raises:
            ArtifactError: naming ``where``, when ``doc`` is not such a record.
        """
        if isinstance(doc, dict) and isinstance(doc.get("key"), str) and isinstance(doc.get("quantized"), bool):
            contribution = doc.get("contribution")
            if contribution is None:
                return WeightQuantization(doc["key"], doc["quantized"])
            if isinstance(contribution, (int, float)) and not isinstance(contribution, bool) and contribution >= 0:
                return WeightQuantization(doc["key"], doc["quantized"], float(contribution))
        raise ArtifactError(f"{where}: an entry of 'quantization.weights' is not a key, whether it is quantized "
                            "and its contribution")


@dataclass(frozen=True, slots=True)
class Quantization:
    """What a quantized directory's manifest records: the mode, the tolerance its examples passed
    (the mode's, or the caller's), and, where the converter reports them, the weights it could quantize."""

    mode: str
    tolerance: Tolerance
    weights: tuple[WeightQuantization, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """``{"mode": ..., "tolerance": {"rtol": ..., "atol": ...}}``, and ``"weights"`` where reported."""
        doc: dict[str, Any] = {"mode": self.mode,
                               "tolerance": {"rtol": self.tolerance.rtol, "atol": self.tolerance.atol}}
        if self.weights:
            doc["weights"] = [w.to_json() for w in self.weights]
        return doc

    def lines(self) -> list[str]:
        """What ``jaxport inspect`` says of it: the mode and tolerance, then each weight the mode could
        quantize, largest contribution first.

        >>> print("\\n".join(Quantization("int8-weights", MODES["int8-weights"], (
        ...     WeightQuantization("fc", True, 0.0123), WeightQuantization("wte", False, 0.031))).lines()))
        quantization: int8-weights, its examples within rtol 0.05, atol 1e-06 of float32
          weights: 1 quantized, 1 kept in float (contribution: the error with it alone quantized)
          wte: float (0.031)
          fc: quantized (0.0123)
        """
        said = [f"quantization: {self.mode}, its examples within {self.tolerance} of float32"]
        if self.weights:
            kept = len(self.kept_float)
            said.append(f"  weights: {len(self.weights) - kept} quantized, {kept} kept in float (contribution: "
                        "the error with it alone quantized)")
            ordered = sorted(self.weights, key=lambda w: 1.0 if w.contribution is None else -w.contribution)
            said.extend(f"  {w.key}: {'quantized' if w.quantized else 'float'} "
                        f"({'not measured' if w.contribution is None else f'{w.contribution:.3g}'})" for w in ordered)
        return said

    @property
    def kept_float(self) -> tuple[str, ...]:
        """The weights it could quantize and kept in float."""
        return tuple(w.key for w in self.weights if not w.quantized)

    @staticmethod
    def from_json(doc: Any, where: str) -> Quantization:
        """The record :meth:`to_json` wrote.

        >>> Quantization.from_json({"mode": "int8-weights", "tolerance": {"rtol": 0.05, "atol": 1e-6}}, "m")
        Quantization(mode='int8-weights', tolerance=Tolerance(rtol=0.05, atol=1e-06), weights=())

        Raises:
            ArtifactError: naming ``where``, when ``doc`` is not such a record.
        """
        tolerance = doc.get("tolerance") if isinstance(doc, dict) else None
        mode = doc.get("mode") if isinstance(doc, dict) else None
        values = [v for v in (tolerance.get(k) for k in ("rtol", "atol")) if isinstance(v, (int, float))
                  and not isinstance(v, bool) and v >= 0] if isinstance(tolerance, dict) else []
        if not isinstance(mode, str) or len(values) != 2:
            raise ArtifactError(f"{where}: 'quantization' is not a mode and a tolerance (rtol, atol)")
        weights = doc.get("weights", [])
        if not isinstance(weights, list):
            raise ArtifactError(f"{where}: 'quantization.weights' is not a list")
        return Quantization(mode, Tolerance(float(values[0]), float(values[1])),
                            tuple(WeightQuantization.from_json(w, where) for w in weights))


def quantization(mode: str | None, tolerance: Tolerance | None = None,
                 weights: Sequence[WeightQuantization] = ()) -> Quantization | None:
    """The record of a conversion with ``mode`` (None for float32), with the caller's tolerance or the mode's.

    >>> quantization(None), quantization("float16")
    (None, Quantization(mode='float16', tolerance=Tolerance(rtol=0.01, atol=1e-06), weights=()))
    >>> quantization("int8-weights", Tolerance(0.5, 1e-6)).tolerance
    Tolerance(rtol=0.5, atol=1e-06)
    """
    return None if mode is None else Quantization(mode, MODES[mode] if tolerance is None else tolerance,
                                                  tuple(weights))


def parse_tolerance(value: object, mode: str | None) -> Tolerance | None:
    """The caller's tolerance of a quantized conversion: ``"RTOL[,ATOL]"`` (the command line), a number
    (``rtol``), a pair ``(rtol, atol)`` or a :class:`Tolerance`; ``atol`` defaults to the mode's.

    >>> parse_tolerance("0.5", "int8-weights"), parse_tolerance("0.1,1e-3", "int8")
    (Tolerance(rtol=0.5, atol=1e-06), Tolerance(rtol=0.1, atol=0.001))
    >>> parse_tolerance(None, None) is None
    True
    >>> try:
    ...     parse_tolerance("-1", "int8")
    ... except UsageError as exc:
    ...     print(exc)
    tolerance '-1' is not RTOL[,ATOL], each a finite number >= 0 (e.g. 0.5 or 0.5,1e-4)

    Raises:
        UsageError: a value not of those forms, a number below zero or not finite, or a tolerance
            without a quantization (``mode`` None).
    """
    if value is None:
        return None
    if isinstance(value, Tolerance):
        value = (value.rtol, value.atol)
    if mode is None:
        raise UsageError(f"tolerance {value!r} applies to a quantized conversion: give quantize=MODE "
                         "(--quantize MODE) too")
    parts: Sequence[object] = ()
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        parts = [value]
    elif isinstance(value, (tuple, list)):
        parts = value
    numbers = [n for n in map(_number, parts) if n is not None and math.isfinite(n) and n >= 0]
    if not 1 <= len(numbers) == len(parts) <= 2:
        raise UsageError(f"tolerance {value!r} is not RTOL[,ATOL], each a finite number >= 0 (e.g. 0.5 or "
                         "0.5,1e-4)")
    return Tolerance(numbers[0], numbers[1] if len(numbers) == 2 else MODES[mode].atol)


def _number(value: object) -> float | None:
    """``value`` as a float (a number, or the text of one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value) if isinstance(value, str) else None
    except ValueError:
        return None


def check_keep_float(patterns: Iterable[str], weights: Sequence[str], mode: str | None) -> None:
    """Checks the caller's ``keep_float`` patterns (globs over the weights' paths, ``blocks/*/fc``)
    against the source's weights, before anything is written.

    >>> check_keep_float(["blocks/*/fc"], ["blocks/0/fc", "wte"], "int8-weights")
    >>> try:
    ...     check_keep_float(["block/*"], ["blocks/0/fc", "wte"], "int8-weights")
    ... except UsageError as exc:
    ...     print(exc)
    keep_float 'block/*' matches no weight of the source (its weights: blocks/0/fc, wte)

    Raises:
        UsageError: a pattern that is empty or not text, matches no weight, or patterns without a
            quantization (``mode`` None).
    """
    patterns = list(patterns)
    if patterns and mode is None:
        raise UsageError("keep_float applies to a quantized conversion: give quantize=MODE (--quantize MODE) too")
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip():
            raise UsageError(f"keep_float {pattern!r} is not a pattern of weights' paths (e.g. 'blocks/*/fc')")
        if not any(fnmatch.fnmatchcase(w, pattern) for w in weights):
            listed = ", ".join(weights[:12]) + (", ..." if len(weights) > 12 else "")
            raise UsageError(f"keep_float {pattern!r} matches no weight of the source (its weights: {listed})")


def kept(key: str, patterns: Iterable[str]) -> bool:
    """Whether the weight ``key`` matches one of ``patterns`` (kept in float).

    >>> kept("blocks/0/fc", ["blocks/*/fc"]), kept("wte", ["blocks/*"])
    (True, False)
    """
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def check_mode(runtime: str, mode: object, offered: Sequence[str]) -> None:
    """Checks that a target (``runtime``) offers the quantization ``mode`` (None: float32, always).

    >>> try:
    ...     check_mode("ONNX", "int8", ("int8-weights",))
    ... except UsageError as exc:
    ...     print(exc)
    Unknown quantization 'int8' for ONNX: give one of ['int8-weights'] or None

    Raises:
        UsageError: a mode the target lacks (the message lists those it has).
    """
    if mode is not None and mode not in offered:
        raise UsageError(f"Unknown quantization {mode!r} for {runtime}: give one of {list(offered)} or None")
