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
  gathered); activations float32 (ONNX; LiteRT quantizes them on the fly, per
  call). Rounding a weight to one of 255 levels per channel is measured at
  0.5-3% of the output's magnitude through two to six layers.
* ``int8-dynamic`` (ONNX): those int8 weights, and each product's activations
  quantized on the fly, per call (ONNX Runtime's ``quantize_dynamic``): about
  twice as fast as float32 on a CPU, at 1.5-1.8x ``int8-weights``' error.
* ``int4-weights``: those weights as int4 in blocks of 32 along the
  reduction, one scale per block (16 levels): measured at 4-12%.
* ``int8``: static quantization, weights and activations of matrix products
  (and convolutions) as int8, calibrated on examples; the rest float32.
* ``float16``: every float32 constant stored as float16 (11 significant bits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
class Quantization:
    """What a quantized directory's manifest records: the mode and the tolerance its examples passed."""

    mode: str
    tolerance: Tolerance

    def to_json(self) -> dict[str, Any]:
        """``{"mode": ..., "tolerance": {"rtol": ..., "atol": ...}}``."""
        return {"mode": self.mode, "tolerance": {"rtol": self.tolerance.rtol, "atol": self.tolerance.atol}}

    @staticmethod
    def from_json(doc: Any, where: str) -> Quantization:
        """The record :meth:`to_json` wrote.

        >>> Quantization.from_json({"mode": "int8-weights", "tolerance": {"rtol": 0.05, "atol": 1e-6}}, "m")
        Quantization(mode='int8-weights', tolerance=Tolerance(rtol=0.05, atol=1e-06))

        Raises:
            ArtifactError: naming ``where``, when ``doc`` is not such a record.
        """
        tolerance = doc.get("tolerance") if isinstance(doc, dict) else None
        mode = doc.get("mode") if isinstance(doc, dict) else None
        values = [v for v in (tolerance.get(k) for k in ("rtol", "atol")) if isinstance(v, (int, float))
                  and not isinstance(v, bool) and v >= 0] if isinstance(tolerance, dict) else []
        if not isinstance(mode, str) or len(values) != 2:
            raise ArtifactError(f"{where}: 'quantization' is not a mode and a tolerance (rtol, atol)")
        return Quantization(mode, Tolerance(float(values[0]), float(values[1])))


def quantization(mode: str | None) -> Quantization | None:
    """The record of a conversion with ``mode`` (None for float32).

    >>> quantization(None), quantization("float16")
    (None, Quantization(mode='float16', tolerance=Tolerance(rtol=0.01, atol=1e-06)))
    """
    return None if mode is None else Quantization(mode, MODES[mode])


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
