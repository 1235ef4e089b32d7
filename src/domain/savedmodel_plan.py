"""The plan of a SavedModel: what each signature takes, returns and hands ``XlaCallModule``.

What the target's plan (:mod:`.target_savedmodel`) refused already (dtypes,
custom calls, several devices) is not asked again; what only this plan can
refuse runs here, before anything is written, with a :class:`ConversionError`
naming the function, the argument and the reason: a calling-convention
version outside the installed TensorFlow's window, a platform TensorFlow
does not know, a VJP's cotangent of a dtype TensorFlow cannot carry. (Whether TensorFlow's StableHLO reads the module is
asked of TensorFlow itself, by the adapter.) The module goes to the op
unchanged, with only its kept arguments; the platforms upper-cased as
TensorFlow names them, all of them (the op selects one at run time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .artifact import ArtifactRecord, AvalRecord, DType
from .bundle import WeightRecord
from .converted import Signature
from .errors import ConversionError
from .runtime_calls import leaf_paths, with_weights_bound
from .runtime_dtypes import DIFFERENTIABLE, KEY_DATA, TF_DTYPES, why_not_tf
from .savedmodel_names import SAVEDMODEL
from .target_savedmodel import TF_PLATFORMS
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
        caller: the record as the caller sees it (the weights bound).
        weights: the number of leading flat inputs that are the weights' variables.
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
    caller: ArtifactRecord
    weights: int
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


def _module_call(name: str, record: ArtifactRecord, paths: Sequence[str], versions: tuple[int, int],
                 uses_shardy: bool, *, keys_ok: int = 0) -> ModuleCall:
    """The op of one table; ``keys_ok``: the leading inputs that may be key data (weights)."""
    lowest, highest = versions
    if record.nr_devices > 1:
        raise ConversionError(SAVEDMODEL, name, f"the module was lowered for {record.nr_devices} "
                              "devices; XlaCallModule runs single-device modules only")
    if not lowest <= record.calling_convention_version <= highest:
        raise ConversionError(SAVEDMODEL, name, f"the calling convention version "
                              f"{record.calling_convention_version} is outside [{lowest}..{highest}], "
                              "the versions that the installed TensorFlow's XlaCallModule accepts")
    unknown = [p for p in record.platforms if p not in TF_PLATFORMS]
    if unknown:
        raise ConversionError(SAVEDMODEL, name, f"the platforms {unknown} are not ones TensorFlow "
                              f"knows ({sorted(TF_PLATFORMS)})")
    for i, (path, aval) in enumerate(zip(paths, record.in_avals)):
        reason = None if (i < keys_ok and aval.dtype in KEY_DATA) else why_not_tf(aval.dtype)
        if reason is not None and aval.dtype is not DType.FLOAT0:
            raise ConversionError(SAVEDMODEL, name, f"it is {reason}", where=path)
    out_dtypes = []
    for i, aval in enumerate(record.out_avals):
        if aval.dtype is DType.FLOAT0:
            out_dtypes.append(_FLOAT0)
            continue
        reason = why_not_tf(aval.dtype)
        if reason is not None:
            raise ConversionError(SAVEDMODEL, name, f"it is {reason}", where=f"result {i}")
        out_dtypes.append(TF_DTYPES[aval.dtype])
    return ModuleCall(
        module=record.mlir_module_serialized, version=record.calling_convention_version,
        platforms=tuple(TF_PLATFORMS[p] for p in record.platforms),
        disabled_checks=tuple(str(c) for c in record.disabled_checks),
        # Calling convention 9 and later pass tokens without the flag (as jax2tf does).
        has_token_input_output=bool(record.ordered_effects) and record.calling_convention_version < 9,
        use_shardy_partitioner=uses_shardy,
        kept=record.module_kept_var_idx, out_dtypes=tuple(out_dtypes),
        out_shapes=tuple(_shape(a) for a in record.out_avals))


def plan_function(name: str, record: ArtifactRecord, signature: Signature, *, uses_shardy: bool,
                  versions: tuple[int, int]) -> FunctionPlan:
    """The plan of one function whose first ``signature.nr_weights`` flat inputs are the weights' variables.

    Args:
        name: the signature's name (and the saved object's attribute).
        record: the function's verified record (weights included, its VJP if any).
        signature: what its callers give and get (the wire names of its tensors).
        uses_shardy: whether its modules use the Shardy dialect (the verifying walk's finding).
        versions: the calling-convention versions the installed TensorFlow accepts.

    Raises:
        ConversionError: the function cannot be converted (see the module's docstring).
    """
    weights = signature.nr_weights
    caller = with_weights_bound(record, weights) if weights else record
    paths = leaf_paths(record.in_tree)[:weights] + leaf_paths(caller.in_tree)
    call = _module_call(name, record, paths, versions, uses_shardy, keys_ok=weights)
    vjp = None
    if record.vjp is not None:
        vjp_paths = [*paths, *(f"the cotangent of result {i}" for i in range(len(record.out_avals)))]
        vjp = _module_call(name, record.vjp, vjp_paths, versions, uses_shardy, keys_ok=weights)
    inputs = tuple(TensorPlan(n, TF_DTYPES[a.dtype], _shape(a)) for n, a in zip(signature.input_names, caller.in_avals))
    outputs = tuple(TensorPlan(n, dtype, shape) for n, dtype, shape in
                    zip(signature.output_names, call.out_dtypes, call.out_shapes))
    return FunctionPlan(name, record, caller, weights, inputs, outputs, call, vjp,
                        tuple(a.dtype in DIFFERENTIABLE for a in record.in_avals),
                        tuple(a.dtype in DIFFERENTIABLE for a in record.out_avals))
