"""The plan of a SavedModel: what each signature takes, returns and hands ``XlaCallModule``.

Everything that can refuse a conversion runs here, before anything is
written, with a :class:`ConversionError` naming the function, the argument
and the reason: a dtype outside :data:`~.runtime_dtypes.TF_DTYPES`, a
custom call that TensorFlow's XLA has no handler for (unless allowed), a
module for several devices, a calling-convention version outside the
installed TensorFlow's window, a platform TensorFlow does not know, two
leaves with one name. (Whether TensorFlow's StableHLO reads the module is
asked of TensorFlow itself, by the adapter.) The module goes to the op
unchanged, with only its kept arguments; the platforms upper-cased as
TensorFlow names them, all of them (the op selects one at run time).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .artifact import ArtifactRecord, AvalRecord, DType, TreeKind
from .bundle_checks import LeafSpec, check_matches_weights
from .bundle_manifest import Manifest, WeightRecord
from .custom_calls import ALLOW_ALL, GUARANTEED_STABLE_TARGETS, HOST_CALLBACK_TARGETS
from .errors import BundleMismatchError, ConversionError
from .module_strings import module_strings
from .runtime_calls import leaf_paths, with_weights_bound
from .runtime_dtypes import DIFFERENTIABLE, KEY_DATA, TF_DTYPES, why_not_tf
from .savedmodel_names import DEFAULT_SIGNATURE, SAVEDMODEL, input_names, output_names, signature_name

#: The lowering platforms TensorFlow knows, by TensorFlow's names for them.
TF_PLATFORMS = {"cpu": "CPU", "cuda": "CUDA", "rocm": "ROCM", "tpu": "TPU"}
#: Custom-call targets that TensorFlow's XLA (or XlaCallModule itself) handles.
TF_HANDLED_TARGETS = frozenset({"shape_assertion", "Sharding", "SPMDFullToShardShape",
                                "SPMDShardToFullShape"})
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


def custom_call_targets(record: ArtifactRecord) -> frozenset[str]:
    """The custom-call targets that ``record``'s module may call, read from its string table.

    The candidates are the targets JAX knows of and those the export allowed.
    """
    strings = module_strings(record.mlir_module_serialized)
    if "custom_call_v1" not in strings:
        return frozenset()
    allowed = {c.target for c in record.disabled_checks if c.target is not None}
    return strings & (GUARANTEED_STABLE_TARGETS | HOST_CALLBACK_TARGETS | allowed)


def _module_call(name: str, record: ArtifactRecord, paths: Sequence[str], allowed: frozenset[str],
                 versions: tuple[int, int], *, keys_ok: int = 0) -> ModuleCall:
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
    lacking = sorted(t for t in custom_call_targets(record) - TF_HANDLED_TARGETS if t not in allowed)
    if lacking and ALLOW_ALL not in allowed:
        raise ConversionError(SAVEDMODEL, name, f"the module calls the custom-call targets {lacking}, "
                              "which TensorFlow's XLA has no handler for (such as JAX's own LAPACK "
                              "kernels behind jnp.linalg on CPU; measured: 'No FFI handler registered' "
                              "at the first call). Name them as allowed (allowed_custom_calls=, "
                              "--allow-custom-call) only if the serving TensorFlow registers them")
    return ModuleCall(
        module=record.mlir_module_serialized, version=record.calling_convention_version,
        platforms=tuple(TF_PLATFORMS[p] for p in record.platforms),
        disabled_checks=tuple(str(c) for c in record.disabled_checks),
        # Calling convention 9 and later pass tokens without the flag (as jax2tf does).
        has_token_input_output=bool(record.ordered_effects) and record.calling_convention_version < 9,
        use_shardy_partitioner="sdy" in module_strings(record.mlir_module_serialized),
        kept=record.module_kept_var_idx, out_dtypes=tuple(out_dtypes),
        out_shapes=tuple(_shape(a) for a in record.out_avals))


def plan_function(name: str, record: ArtifactRecord, weights: int, *, allowed_custom_calls: Iterable[str],
                  versions: tuple[int, int]) -> FunctionPlan:
    """The plan of one function whose first ``weights`` flat inputs are the weights' variables.

    Raises:
        ConversionError: the function cannot be converted (see the module's docstring).
        ArtifactError: the function does not take that many weights first.
    """
    allowed = frozenset(allowed_custom_calls)
    caller = with_weights_bound(record, weights) if weights else record
    paths = leaf_paths(record.in_tree)[:weights] + leaf_paths(caller.in_tree)
    call = _module_call(name, record, paths, allowed, versions, keys_ok=weights)
    vjp = None
    if record.vjp is not None:
        vjp_paths = [*paths, *(f"the cotangent of result {i}" for i in range(len(record.out_avals)))]
        vjp = _module_call(name, record.vjp, vjp_paths, allowed, versions, keys_ok=weights)
    inputs = tuple(TensorPlan(n, TF_DTYPES[a.dtype], _shape(a))
                   for n, a in zip(input_names(name, caller.in_tree), caller.in_avals))
    outputs = tuple(TensorPlan(n, dtype, shape) for n, dtype, shape in
                    zip(output_names(name, record.out_tree), call.out_dtypes, call.out_shapes))
    return FunctionPlan(name, record, caller, weights, inputs, outputs, call, vjp,
                        tuple(a.dtype in DIFFERENTIABLE for a in record.in_avals),
                        tuple(a.dtype in DIFFERENTIABLE for a in record.out_avals))


def plan_savedmodel(functions: Sequence[tuple[str, ArtifactRecord, bool]], manifest: Manifest | None,
                    *, default: str | None, allowed_custom_calls: Iterable[str],
                    versions: tuple[int, int]) -> SavedModelPlan:
    """The plan of a SavedModel of ``functions`` (name, record, takes the weights).

    Args:
        functions: a bundle's functions, or one artifact named :data:`DEFAULT_SIGNATURE`.
        manifest: the bundle's manifest (its weights become variables), or None.
        default: the function that ``serving_default`` calls (None: the only one).
        allowed_custom_calls: custom-call targets to carry although TensorFlow lacks them.
        versions: the calling-convention versions the installed TensorFlow accepts.

    Raises:
        ConversionError: a function cannot be converted, or ``default`` names none.
    """
    names = [name for name, _, _ in functions]
    if default is not None and default not in names:
        raise ConversionError(SAVEDMODEL, None, f"default={default!r} names no function; the "
                              f"functions are {names}")
    if default is None and len(names) == 1:
        default = names[0]
    weights = manifest.weights if manifest is not None else ()
    plans = []
    for name, record, takes_params in functions:
        if name != DEFAULT_SIGNATURE:
            signature_name(name)
        count = len(weights) if takes_params else 0
        if count and manifest is not None:
            _check_weights(name, record, manifest, count)
        plans.append(plan_function(name, record, count, allowed_custom_calls=allowed_custom_calls,
                                   versions=versions))
    return SavedModelPlan(tuple(plans), default, tuple(weights))


def _check_weights(name: str, record: ArtifactRecord, manifest: Manifest, count: int) -> None:
    args = record.in_tree.children[0] if record.in_tree.children else None
    if args is None or args.kind is not TreeKind.TUPLE or not args.children:
        raise ConversionError(SAVEDMODEL, name, "the bundle says it takes the weights, but it takes "
                              "no positional argument")
    leaves = [LeafSpec(tuple(int(d) if d.isdigit() else d for d in a.shape), a.dtype.value)
              for a in record.in_avals[:count]]
    try:
        check_matches_weights(name, manifest.params_tree, manifest.weights, args.children[0], leaves)
    except BundleMismatchError as exc:
        raise ConversionError(SAVEDMODEL, name, str(exc), where="args[0]") from exc
