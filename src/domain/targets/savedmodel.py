"""The SavedModel target (TensorFlow's ``XlaCallModule``): what it refuses, its host check, its options.

A SavedModel runs any size the signature allows (one variant, the
SavedModel itself), ordered effects (tokens), JAX's ``shape_assertion`` and
the sharding annotations of single-device modules, on the platforms
TensorFlow knows. Its ``target_details`` map each function to its
signature's name and its platforms, and name the default signature
(``serving_default``, TensorFlow Serving's default key). Its manifest lives
in ``assets.extra/jaxport/``, a folder TensorFlow Serving leaves alone.

Names: inputs and outputs are named by the rule of every target
(:mod:`jaxport.domain.calls.wire_names`). A signature is named after its
function; a function whose name TensorFlow does not accept as an attribute
and signature name gets the name escaped as a wire name's first segment
(``<lambda>`` is ``.3clambda.3e``). ``serving_default`` (TensorFlow
Serving's default key) calls the function named as the default, or the only
one. A weight's variable is named by its key path, the characters
TensorFlow refuses written ``_``.

The plan's refusals (:data:`PLAN`, run once by the pipeline) include the
SavedModel's own: a module for several platforms one of which TensorFlow
does not know (the op carries them all). The build plan
(:class:`SavedModelPlan`): what each signature takes, returns and hands
``XlaCallModule``; what only it can refuse, with a :class:`ConversionError`
naming the function and the reason, is a calling-convention version outside
the installed TensorFlow's window. (Whether TensorFlow's StableHLO reads
the module is asked of TensorFlow itself, by the adapter.) The module goes
to the op unchanged, with only its kept arguments; the platforms
upper-cased as TensorFlow names them, all of them (the op selects one at
run time).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from jaxport.domain.artifact.platforms import callee_platform_indices
from jaxport.domain.artifact.record import DType, ArtifactRecord, AvalRecord
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.domain.bundle.manifest import WeightRecord
from jaxport.domain.calls.signature import Signature
from jaxport.domain.calls.wire_names import escape_segment
from jaxport.domain.errors import ConversionError
from .dtypes import BOOL_AND_INTEGERS, DIFFERENTIABLE
from .plan import BFloat16, DtypeTable, TargetPlan


#: The target, as messages name it (the plan's ``runtime``, the converter's refusals).
SAVEDMODEL = "a TensorFlow SavedModel"
#: The signature TensorFlow Serving calls when a request names none.
DEFAULT_SIGNATURE = "serving_default"

#: The dtypes that TensorFlow's ``XlaCallModule`` carries (TensorFlow names each as the artifact does).
#: Left out: ``int4``/``uint4`` (TensorFlow 2.21 has the dtypes, but XlaCallModule on CPU
#: returns wrong values for them), ``float4_e2m1fn`` (no CPU kernel takes it),
#: ``float8_e4m3``, ``float8_e3m4``, ``float8_e8m0fnu`` (TensorFlow has no such dtype),
#: ``float0`` and the PRNG key types (:mod:`jaxport.domain.targets.dtypes`).
TF_DTYPES = BOOL_AND_INTEGERS | DIFFERENTIABLE

_REFUSED = re.compile(r"[^A-Za-z0-9_.\-/>]")
_FIRST = re.compile(r"[A-Za-z0-9.]")
_SIGNATURE = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def tf_name(name: str) -> str:
    """``name`` as TensorFlow accepts it for a variable.

    >>> tf_name("arg1/dense/w"), tf_name("a~1b"), tf_name("_private"), tf_name("")
    ('arg1/dense/w', 'a_1b', 'x_private', 'x')
    """
    escaped = _REFUSED.sub("_", name)
    return escaped if _FIRST.match(escaped) else "x" + escaped


def signature_name(function: str) -> str:
    """The signature (and the saved object's attribute) of ``function``.

    >>> signature_name("predict"), signature_name("<lambda>"), signature_name("serving_default")
    ('predict', '.3clambda.3e', 'serving_default_')
    """
    if function == DEFAULT_SIGNATURE:
        return function + "_"
    return function if _SIGNATURE.fullmatch(function) else escape_segment(function, first=True)


#: The lowering platforms TensorFlow knows, by TensorFlow's names for them.
TF_PLATFORMS = {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCM", "tpu": "TPU"}
#: Custom-call targets that TensorFlow's XLA (or XlaCallModule itself) handles.
TF_HANDLED_TARGETS = frozenset({"shape_assertion", "Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape"})
#: Where the manifest and jaxport's other files go, relative to the SavedModel directory.
JAXPORT_DIR = "assets.extra/jaxport"


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


def refuse_function(signature: Signature, record: ArtifactRecord, options: SavedModelOptions) -> None:
    """The SavedModel's own refusal (the plan's ``refuse_function``): a platform TensorFlow does not know.

    Raises:
        ConversionError: one of the module's platforms is not one of :data:`TF_PLATFORMS`.
    """
    unknown = [p for p in record.platforms if p not in TF_PLATFORMS]
    if unknown:
        raise ConversionError(SAVEDMODEL, signature.name, f"the platforms {unknown} are not ones TensorFlow "
                              f"knows ({sorted(TF_PLATFORMS)})")


PLAN = TargetPlan(
    runtime=SAVEDMODEL,
    dtypes=DtypeTable(TF_DTYPES, bfloat16=BFloat16.NATIVE, notes={
        d: f"the dtype {d.value}, for which TensorFlow's XlaCallModule returns wrong values on CPU"
        for d in (DType.INT4, DType.UINT4)}),
    platforms=frozenset(TF_PLATFORMS),
    ordered_effects=True,
    custom_calls=TF_HANDLED_TARGETS,
    keeps_vjp=True,
    check_host=check_host,
    describe=describe,
    refuse_function=refuse_function,
    options_allow=lambda options: options.allowed_custom_calls,  # the custom calls the options let through
)


#: XLA lowers ``float0`` (the cotangent of an integer) to ``bool``.
_FLOAT0 = "bool"


@dataclass(frozen=True, slots=True)
class TensorPlan:
    """One tensor of a signature: its name, TensorFlow dtype and shape (None: symbolic)."""

    name: str
    dtype: str
    shape: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class ModuleCall:
    """The attributes of one ``XlaCallModule`` op and which flat inputs it is given."""

    module: bytes
    version: int
    platforms: tuple[str, ...]
    disabled_checks: tuple[str, ...]
    has_token_input_output: bool
    use_shardy_partitioner: bool
    kept: tuple[int, ...]
    out_dtypes: tuple[str, ...]
    out_shapes: tuple[tuple[int | None, ...], ...]


@dataclass(frozen=True, slots=True)
class FunctionPlan:
    """One function of the SavedModel.

    Attributes:
        name: the signature's name (and the loaded object's attribute).
        record: the function's full record (weights included).
        caller: the signature as the caller sees it (its ``nr_weights`` leading flat inputs,
            the weights' variables, bound).
        inputs, outputs: the signature's tensors, in flattening order.
        call: the forward module's op.
        vjp: the VJP module's op (inputs: the flat inputs, then one cotangent
            per output), or None without VJP.
        differentiable: per flat input (weights first), whether it has a gradient.
        output_differentiable: per flat output, whether its cotangent is a real one
            (else ``float0``, passed as ``bool`` zeros).
    """

    name: str
    record: ArtifactRecord
    caller: Signature
    inputs: tuple[TensorPlan, ...]
    outputs: tuple[TensorPlan, ...]
    call: ModuleCall
    vjp: ModuleCall | None
    differentiable: tuple[bool, ...]
    output_differentiable: tuple[bool, ...]


@dataclass(frozen=True, slots=True)
class SavedModelPlan:
    """The whole SavedModel: functions, the default signature and the weights' variables."""

    functions: tuple[FunctionPlan, ...]
    default: str | None
    weights: tuple[WeightRecord, ...]


def _shape(aval: AvalRecord) -> tuple[int | None, ...]:
    return tuple(int(d) if d.isdigit() else None for d in aval.shape)


def _module_call(name: str, record: ArtifactRecord, versions: tuple[int, int], uses_shardy: bool) -> ModuleCall:
    """The op of one module (its dtypes and platforms were refused by the plan: :data:`PLAN`)."""
    lowest, highest = versions
    if not lowest <= record.calling_convention_version <= highest:
        raise ConversionError(SAVEDMODEL, name, f"the calling convention version "
                              f"{record.calling_convention_version} is outside [{lowest}..{highest}], "
                              "the versions that the installed TensorFlow's XlaCallModule accepts")
    out_dtypes = tuple(_FLOAT0 if a.dtype is DType.FLOAT0 else a.dtype.value for a in record.out_avals)
    return ModuleCall(
        module=record.mlir_module_serialized, version=record.calling_convention_version,
        platforms=tuple(TF_PLATFORMS[p] for p in record.platforms),
        disabled_checks=tuple(str(c) for c in record.disabled_checks),
        # Calling convention 9 and later pass tokens without the flag (as jax2tf does).
        has_token_input_output=bool(record.ordered_effects) and record.calling_convention_version < 9,
        use_shardy_partitioner=uses_shardy,
        kept=record.module_kept_var_idx, out_dtypes=out_dtypes,
        out_shapes=tuple(_shape(a) for a in record.out_avals))


def plan_function(name: str, record: ArtifactRecord, signature: Signature, *, uses_shardy: bool,
                  versions: tuple[int, int]) -> FunctionPlan:
    """The plan of one function whose first ``signature.nr_weights`` flat inputs are the weights' variables.

    Args:
        name: the signature's name (and the saved object's attribute).
        record: the function's verified record (weights included, its VJP if any),
            which :data:`PLAN`'s refusals let through.
        signature: what its callers give and get (the wire names of its tensors).
        uses_shardy: whether its modules use the Shardy dialect (the verifying walk's finding).
        versions: the calling-convention versions the installed TensorFlow accepts.

    Raises:
        ConversionError: the function cannot be converted (see the module's docstring).
    """
    call = _module_call(name, record, versions, uses_shardy)
    vjp = None if record.vjp is None else _module_call(name, record.vjp, versions, uses_shardy)
    inputs = tuple(TensorPlan(n, a.dtype.value, _shape(a)) for n, a in zip(signature.input_names, signature.in_avals))
    outputs = tuple(TensorPlan(n, dtype, shape) for n, dtype, shape in
                    zip(signature.output_names, call.out_dtypes, call.out_shapes))
    return FunctionPlan(name, record, signature, inputs, outputs, call, vjp,
                        tuple(a.dtype in DIFFERENTIABLE for a in record.in_avals),
                        tuple(a.dtype in DIFFERENTIABLE for a in record.out_avals))
