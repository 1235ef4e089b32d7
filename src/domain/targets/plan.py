"""What a runtime target refuses, decided before anything is written: one plan shape for every target.

A target's plan says which dtypes it holds (with its bfloat16 policy), which
platforms it runs a module of, whether it takes several devices or ordered
effects, which custom calls it runs, whether it needs a variant per binding
of the dimension variables, and how it checks a host before loading.
The conversion pipeline runs them once, before any converter, on each
function: :func:`refuse_record` (what the record says, and the target's own
refusals given its options), :func:`refuse_custom_calls` (the custom calls
that the verifying child's walk of the module found) and
:func:`variant_shapes` (the static shapes of each variant): every target
refuses the same things with the same words, and its converter repeats none.

bfloat16 policy: at the boundary, a caller always passes and gets
``bfloat16`` arrays (``ml_dtypes.bfloat16``) where the export says
``bfloat16``, on every target. Inside, a target either computes in
bfloat16 as XLA does (``NATIVE``: TensorFlow's XLA, IREE), or computes in
float32 and rounds each result to bfloat16 (``FLOAT32_INSIDE``: the
converter widens, for runtimes without bfloat16 kernels, as XLA does on
CPU), or refuses the dtype (``REFUSED``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from jaxport.domain.artifact.record import ArtifactRecord, DType
from jaxport.domain.artifact.custom_calls import ALLOW_ALL, CPU_LAPACK_TARGETS, HOST_CALLBACK_TARGETS
from jaxport.domain.errors import ConversionError, UnsupportedOperationError
from jaxport.domain.calls.signature import Signature
from jaxport.domain.converted.numerics import Tolerance
from jaxport.domain.converted.static_shapes import StaticShapes, static_shapes
from jaxport.domain.calls.front import dimension_variables, leaf_paths
from .dtypes import KEY_DATA


class BFloat16(Enum):
    """How a target computes with bfloat16 (the boundary is bfloat16 on every target)."""

    NATIVE = "native"
    FLOAT32_INSIDE = "float32 inside"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class DtypeTable:
    """The dtypes a target holds at its boundary.

    Attributes:
        dtypes: those it holds as a caller's array and as a weight.
        keys_as_weights: a PRNG key array as a weight travels as its key data.
        bfloat16: its bfloat16 policy (``REFUSED``: bfloat16 is not in ``dtypes``).
        notes: why a dtype left out is left out, where it is not obvious.
    """

    dtypes: frozenset[DType]
    keys_as_weights: bool = True
    bfloat16: BFloat16 = BFloat16.NATIVE
    notes: Mapping[DType, str] = field(default_factory=dict)

    def why_not(self, dtype: DType, runtime: str, *, weight: bool = False) -> str | None:
        """Why ``runtime`` cannot hold ``dtype`` as a caller's array (or a weight), or None."""
        if dtype in self.dtypes or (weight and self.keys_as_weights and dtype in KEY_DATA):
            return None
        if dtype in KEY_DATA:
            return (f"a PRNG key array ({dtype.value}): export the function taking "
                    f"jax.random.key_data(key), a {KEY_DATA[dtype][0]} array")
        return self.notes.get(dtype, f"the dtype {dtype.value}, which {runtime} cannot hold")


@dataclass(frozen=True, slots=True)
class TargetPlan:
    """What one target refuses.

    Attributes:
        runtime: the target as messages name it (``"IREE"``, ``"a TensorFlow SavedModel"``).
        dtypes: its dtype table.
        platforms: the lowering platforms it runs a module of (one must be
            among the artifact's); empty: any.
        several_devices: it runs modules for several devices.
        ordered_effects: it runs modules with ordered effects (tokens).
        custom_calls: the custom-call targets it runs (or erases).
        needs_bindings: a symbolic function needs one variant per binding of its variables.
        bindings_optional: a symbolic function may be given bindings (one variant
            each); without, it becomes one variant of any size (LiteRT, whose
            converter keeps most symbolic dimensions dynamic).
        keeps_vjp: the converter carries each function's first VJP (the
            pipeline verifies and walks its module too).
        check_host: the host check (target details, host facts, directory) that
            the loader runs before the runtime loads anything; None: none.
        describe: one line on what the directory was made for, from its
            target details (``jaxport convert`` and ``jaxport inspect`` print it).
        numerics_tolerance: the tolerance of the golden examples' floating outputs
            on a directory with these target details, when the caller gives none
            (None, or a function answering None: each dtype's default). LiteRT's
            ``int8-weights`` models answer a looser one.
        refuse_function: the target's own refusals of one function (its caller's
            signature, its record, the target's options), beyond those every
            target makes; None: none. ONNX's ``web`` refuses a bfloat16 input or output.
        options_allow: the custom calls the target's options let through besides
            ``custom_calls`` (a SavedModel's ``allowed_custom_calls``); None: none.
        custom_call_reason: why the target refuses a custom call, where it says more than
            the generic reasons (ONNX: the convention of a LAPACK kernel out of its reach); None: none.
        unfolded_reason: why the target has no form of an operation it unfolds (given the operation
            and its dtype: :mod:`jaxport.domain.targets.unfolded`), else None; None: it has every form.
    """

    runtime: str
    dtypes: DtypeTable
    platforms: frozenset[str] = frozenset()
    several_devices: bool = False
    ordered_effects: bool = False
    custom_calls: frozenset[str] = frozenset({"shape_assertion"})
    needs_bindings: bool = False
    bindings_optional: bool = False
    keeps_vjp: bool = False
    check_host: Callable[[Mapping[str, Any], Mapping[str, Any], str], None] | None = None
    describe: Callable[[Mapping[str, Any]], str] | None = None
    numerics_tolerance: Callable[[Mapping[str, Any]], Tolerance | None] | None = None
    refuse_function: Callable[[Signature, ArtifactRecord, Any], None] | None = None
    options_allow: Callable[[Any], Iterable[str]] | None = None
    custom_call_reason: Callable[[str], str | None] | None = None
    unfolded_reason: Callable[[str, str], str | None] | None = None

    def allowed_custom_calls(self, options: Any) -> tuple[str, ...]:
        """The custom calls that ``options`` (the target's) let through besides the plan's own."""
        return () if self.options_allow is None else tuple(self.options_allow(options))


def refuse(plan: TargetPlan, name: str, record: ArtifactRecord, *, nr_weights: int,
           custom_calls: Sequence[str] = (), allowed_custom_calls: Iterable[str] = ()) -> None:
    """Refuses a function that ``plan``'s target cannot run: :func:`refuse_record`, then
    :func:`refuse_custom_calls` (without the target's own refusals, which need its options).

    Raises:
        ConversionError: naming the function, the argument and the reason.
    """
    refuse_record(plan, name, record, nr_weights=nr_weights)
    refuse_custom_calls(plan, name, custom_calls, allowed_custom_calls)


def refuse_record(plan: TargetPlan, name: str, record: ArtifactRecord, *, nr_weights: int) -> None:
    """Refuses a function whose record says that ``plan``'s target cannot run it (its VJP is not converted).

    Args:
        name: the function's name in the directory.
        record: its record (weights included).
        nr_weights: how many leading flat inputs are weights.

    Raises:
        ConversionError: naming the function, the argument and the reason: its
            platforms, its devices, its ordered effects, a dtype.
    """
    if plan.platforms and not plan.platforms & set(record.platforms):
        raise ConversionError(plan.runtime, name, f"it was exported for {list(record.platforms)} only; "
                              f"export it with platforms that include one of {sorted(plan.platforms)}.")
    if record.nr_devices > 1 and not plan.several_devices:
        raise ConversionError(plan.runtime, name, f"its module is for {record.nr_devices} devices "
                              "(sharded); export it for one device.")
    if record.ordered_effects and not plan.ordered_effects:
        effects = ", ".join(e.type_name for e in record.ordered_effects)
        raise ConversionError(plan.runtime, name, f"it has ordered effects ({effects}), which "
                              f"{plan.runtime} cannot run (it has no tokens).")
    arrays = [(path, aval, i < nr_weights) for i, (path, aval) in enumerate(zip(leaf_paths(record.in_tree),
                                                                                 record.in_avals))]
    arrays += [(f"flat result {i}", aval, False) for i, aval in enumerate(record.out_avals)]
    for where, aval, weight in arrays:
        why = plan.dtypes.why_not(aval.dtype, plan.runtime, weight=weight)
        if why is not None:
            raise ConversionError(plan.runtime, name, f"{aval} is {why}", where=where)


def refuse_custom_calls(plan: TargetPlan, name: str, custom_calls: Sequence[str],
                        allowed_custom_calls: Iterable[str] = ()) -> None:
    """Refuses a function whose module calls a custom call that ``plan``'s target does not run.

    Args:
        name: the function's name in the directory.
        custom_calls: the targets the verifying child's walk found.
        allowed_custom_calls: targets the user names as provided by the
            serving runtime (``"ALL"``: any).

    Raises:
        ConversionError: naming the function, the custom call and why.
    """
    allowed = frozenset(allowed_custom_calls)
    if ALLOW_ALL in allowed:
        return
    for target in custom_calls:
        if target in plan.custom_calls or target in allowed:
            continue
        reason = plan.custom_call_reason(target) if plan.custom_call_reason is not None else None
        if reason is not None:
            why = reason
        elif target in HOST_CALLBACK_TARGETS:
            why = ("a host callback (jax.debug.print, jax.pure_callback, io_callback), which runs "
                   "Python code of the exporting process")
        elif target in CPU_LAPACK_TARGETS:
            why = f"a LAPACK kernel of JAX's CPU runtime (behind jnp.linalg), which {plan.runtime} does not have"
        else:
            why = f"a kernel of another runtime, which {plan.runtime} does not have"
        raise ConversionError(plan.runtime, name, f"its module calls the custom call '{target}', {why}")


def refuse_unfolded(plan: TargetPlan, name: str, unfolded: Sequence[tuple[str, str, str]]) -> None:
    """Refuses a function whose module has an operation to unfold on a dtype ``plan``'s target has no form for.

    Args:
        name: the function's name in the directory.
        unfolded: (operation, dtype, source location) of each, as the verifying child's walk found them.

    Raises:
        UnsupportedOperationError: naming the operation, its location, the dtype and why.
    """
    if plan.unfolded_reason is None:
        return
    for operation, dtype, location in unfolded:
        why = plan.unfolded_reason(operation, dtype)
        if why is not None:
            raise UnsupportedOperationError(plan.runtime, name, operation, location,
                                            f"{plan.runtime} has no {dtype} form of it: {why}")


def variant_shapes(plan: TargetPlan, name: str, record: ArtifactRecord,
                   bindings: Sequence[Mapping[str, int]] | None, *, nr_weights: int) -> tuple[StaticShapes, ...]:
    """The static shapes of each variant to make of a function, each binding checked once, here.

    A target that compiles static shapes (``needs_bindings``) gets one per
    binding (one, unbound, for a static function); one that may take
    bindings (``bindings_optional``) gets one per binding, or one for a
    static function, or none: one variant whose symbolic dimensions stay
    dynamic. Any other target gets none: one variant of any size.

    Raises:
        ConversionError: as :func:`~jaxport.domain.converted.static_shapes.static_shapes`,
            or bindings for a target that runs any size.
    """
    if plan.needs_bindings or (plan.bindings_optional and (bindings or not dimension_variables(record.signature))):
        return tuple(static_shapes(name, record, bindings, nr_weights=nr_weights, runtime=plan.runtime))
    if bindings:
        raise ConversionError(plan.runtime, name, "the target runs any size: give it no dims")
    return ()
