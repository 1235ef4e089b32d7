"""The SavedModel target (TensorFlow's ``XlaCallModule``): what it refuses, its host check, its options.

A SavedModel runs any size the signature allows (one variant, the
SavedModel itself), ordered effects (tokens), JAX's ``shape_assertion`` and
the sharding annotations of single-device modules, on the platforms
TensorFlow knows. Its ``target_details`` map each function to its
signature's name and its platforms, and name the default signature
(``serving_default``, TensorFlow Serving's default key). Its manifest lives
in ``assets.extra/jaxport/``, a folder TensorFlow Serving leaves alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .artifact import DType
from .safety import DisabledSafetyCheck
from .platforms import callee_platform_indices
from .runtime_dtypes import TF_DTYPES
from .target_plan import BFloat16, DtypeTable, TargetPlan

#: The lowering platforms TensorFlow knows, by TensorFlow's names for them.
TF_PLATFORMS = {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCM", "tpu": "TPU"}
#: Custom-call targets that TensorFlow's XLA (or XlaCallModule itself) handles.
TF_HANDLED_TARGETS = frozenset({"shape_assertion", "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"})
#: Where the manifest and jaxport's other files go, relative to the SavedModel directory.
JAXPORT_DIR = "assets.extra/jaxport"
#: The signature TensorFlow Serving calls when a request names none.
DEFAULT_SIGNATURE = "serving_default"


@dataclass(frozen=True, slots=True)
class SavedModelOptions:
    """How to write a SavedModel.

    Attributes:
        allowed_custom_calls: custom-call targets to carry although TensorFlow's
            XLA has no handler for them (the serving TensorFlow registers them); ``"ALL"``: any.
        default: the function that ``serving_default`` calls (None: the only one).
    """

    target: ClassVar[str] = "savedmodel"
    allowed_custom_calls: tuple[str, ...] = ()
    default: str | None = None


def check_host(details: Mapping[str, Any], host: Mapping[str, Any], path: str) -> None:
    """Checks that TensorFlow here (``{"platforms": ["cpu"]}``) runs every function's module.

    Raises:
        PlatformMismatchError: a function was exported for none of this machine's platforms.
    """
    current = list(host.get("platforms", ()))
    for name, fn in dict(details.get("functions", {})).items():
        disabled = (DisabledSafetyCheck.platform(),) if fn.get("platform_check_disabled") else ()
        callee_platform_indices(name, list(fn.get("platforms", ())), current, disabled)


def describe(details: Mapping[str, Any]) -> str:
    """What ``jaxport convert`` and ``jaxport inspect`` say of the SavedModel: its default signature."""
    default = details.get("default")
    return (f"{DEFAULT_SIGNATURE} calls {default}" if default else f"no {DEFAULT_SIGNATURE}") + \
        f" (TensorFlow {details.get('tensorflow', '?')})"


PLAN = TargetPlan(
    runtime="a TensorFlow SavedModel",
    dtypes=DtypeTable(frozenset(TF_DTYPES), bfloat16=BFloat16.NATIVE, notes={
        d: f"the dtype {d.value}, for which TensorFlow's XlaCallModule returns wrong values on CPU"
        for d in (DType.INT4, DType.UINT4)}),
    platforms=frozenset(TF_PLATFORMS),
    ordered_effects=True,
    custom_calls=TF_HANDLED_TARGETS,
    keeps_vjp=True,
    check_host=check_host,
    describe=describe,
)
