"""Typed errors that a user of jaxport can cause.

Each error inherits from :class:`JaxportError` and from the builtin exception
that ``jax.export`` raises in the same situation, so code written against
``jax.export`` keeps catching it. Messages keep JAX's wording where users
already search for it.

Every error that jaxport defines, wherever it is defined, presents itself as
``jaxport.errors.X`` (its ``__module__``), the module users import it from,
which re-exports each of them; errors pickle by that name.

>>> import pickle, traceback
>>> error = RankMismatchError("args[0]", "(3,)", "(4, 1)")
>>> print(*traceback.format_exception_only(error), end="")
jaxport.errors.RankMismatchError: Rank mismatch for args[0]: expected (3,) and called with (4, 1)
>>> str(pickle.loads(pickle.dumps(error))) == str(error)
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .jax_docs import DocPages

#: Where users import jaxport's errors from, and so the module that each names as its own.
PUBLIC_MODULE = "jaxport.errors"


class JaxportError(Exception):
    """The base of every error that jaxport raises on purpose.

    A subclass defined in jaxport names :data:`PUBLIC_MODULE` as its module.
    An adapter's subclass that only adds another library's exception type to a
    public error (so that code written against JAX catches it too) passes
    ``presents_as=`` that error: it prints with that error's name and pickles
    as that error, so that a process without the other library can load it.
    """

    __module__ = PUBLIC_MODULE
    _pickled_as: ClassVar[type[JaxportError] | None] = None

    def __init_subclass__(cls, *, presents_as: type[JaxportError] | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("jaxport."):
            cls.__module__ = PUBLIC_MODULE
        if presents_as is not None:
            cls.__name__, cls.__qualname__ = presents_as.__name__, presents_as.__qualname__
            cls._pickled_as = presents_as

    def __reduce__(self) -> tuple[Any, ...]:
        # Not the default (calling the class with ``args``): many ``__init__``s
        # take typed fields and build the message, which is all ``args`` holds.
        return _rebuild, (self._pickled_as or type(self), self.args), self.__dict__ or None


def _rebuild(cls: type[JaxportError], args: tuple[Any, ...]) -> JaxportError:
    """An instance of ``cls`` holding ``args``, made without calling ``__init__`` (for unpickling)."""
    error = cls.__new__(cls, *args)
    error.args = args
    return error


class ExportError(JaxportError, ValueError):
    """The function cannot be exported as asked."""


class DisallowedCustomCallError(ExportError):
    """The module calls custom-call targets without compatibility guarantees."""

    def __init__(self, offenders: Sequence[str], docs: DocPages) -> None:
        self.offenders = tuple(offenders)
        listing = "\n".join(self.offenders)
        super().__init__(
            "Cannot serialize code with custom calls whose targets have no "
            "compatibility guarantees. "
            f"See {docs.export}#compatibility-guarantees-for-custom-calls. "
            f"Examples are:\n{listing}.\n"
            "To export anyway, pass disabled_checks=[jaxport.DisabledSafetyCheck.custom_call(target)] "
            "for each target, after making sure that the consumer will have that target."
        )


class HostCallbackError(JaxportError, NotImplementedError):
    """The function calls back into Python, which an artifact cannot carry."""

    def __init__(self, fun_name: str) -> None:
        super().__init__(
            f"Cannot export '{fun_name}': serialization of host_callbacks is not yet implemented. "
            "The function uses a host callback (jax.debug.print, jax.debug.callback, "
            "jax.pure_callback or io_callback), which runs Python code of the exporting "
            "process; a serialized artifact can only carry the compiled StableHLO module, "
            "so the callback could not run where the artifact is loaded. Remove the callback "
            "from the exported function."
        )


class ShardingPolicyError(ExportError):
    """No longer raised: sharding annotations are accepted wherever ``jax.export`` accepts
    them (kept so that code catching it still imports)."""


class CallingConventionError(JaxportError, ValueError):
    """A calling-convention version outside the supported window."""

    def __init__(self, version: int, minimum: int, maximum: int, *, when: str) -> None:
        self.version = version
        super().__init__(
            f"The {when} calling convention version {version} is outside the range of "
            f"supported versions [{minimum}..{maximum}]"
        )


class BundleError(JaxportError, ValueError):
    """A bundle cannot be saved as asked (a bad function name, weights or metadata)."""


class BundleMismatchError(BundleError):
    """A function's weights argument, or new weights, differ from the bundle's weights.

    Attributes:
        function: the function whose signature differs (None for ``with_params``).
        key_path: the weights' key path where they differ (``"dense/w"``; ``""`` for the root).
    """

    def __init__(self, function: str | None, key_path: str, detail: str) -> None:
        self.function = function
        self.key_path = key_path
        where = f"function '{function}'" if function is not None else "the new weights"
        super().__init__(f"The weights of {where} differ from the bundle's weights at "
                         f"'{key_path}': {detail}")


class CallError(JaxportError, ValueError):
    """The arguments of a call do not match what the function was exported for."""


@dataclass(frozen=True, slots=True)
class TreeDifference:
    """One structural difference between the call's pytree and the exported one."""

    path: str
    in_call: str
    when_exported: str
    explanation: str

    def __str__(self) -> str:
        return (
            f"   - {self.path} is a {self.in_call} in the invocation and a "
            f"{self.when_exported} when exported, so {self.explanation}.\n"
        )


class TreeMismatchError(CallError):
    """The call's (args, kwargs) pytree differs from the exported one.

    ``weights_bound``: the function is a bundle's, whose weights are bound as
    its first argument; the differences then speak of the caller's arguments.
    """

    def __init__(self, fun_name: str, differences: Sequence[TreeDifference], *,
                 weights_bound: bool = False) -> None:
        self.differences = tuple(differences)
        bound = " (less the bundle's weights, which it binds as its first argument)" if weights_bound else ""
        super().__init__(
            "The invocation args and kwargs must have the same pytree structure "
            f"as when the function '{fun_name}' was exported{bound}, but they "
            "have the following structural differences:\n"
            + "\n".join(str(d) for d in self.differences)
        )


class RankMismatchError(CallError):
    """An argument has another rank than the exported one."""

    def __init__(self, where: str, expected: str, got: str) -> None:
        super().__init__(f"Rank mismatch for {where}: expected {expected} and called with {got}")


class DtypeMismatchError(CallError):
    """An argument has another dtype than the exported one."""

    def __init__(self, where: str, expected: str, got: str) -> None:
        super().__init__(f"Dtype mismatch for {where}: expected {expected} and called with {got}")


class ShapeMismatchError(CallError):
    """A constant dimension of an argument differs from the exported one."""

    def __init__(self, where: str, expected: str, got: str) -> None:
        super().__init__(
            f"Shape mismatch for {where} (expected same constant): "
            f"expected {expected} and called with {got}"
        )


class BatchRowError(CallError):
    """One row of a batch that an engine handed a function does not match it.

    Attributes:
        function: the function's name.
        row: the row's index in its batch.
        reason: what is wrong with it (the call front's message).
    """

    def __init__(self, function: str, row: int, reason: str) -> None:
        self.function, self.row, self.reason = function, row, reason
        super().__init__(f"Row {row} of the batch to '{function}' is refused: {reason}")


class PlatformMismatchError(JaxportError, ValueError):
    """The function is called on a platform it was not exported for."""

    def __init__(self, fun_name: str, exported: Sequence[str], current: Sequence[str]) -> None:
        self.exported_platforms = tuple(exported)
        self.current_platforms = tuple(current)
        super().__init__(
            f"Function '{fun_name}' was exported for platforms '{self.exported_platforms}' "
            f"but it is used on '{self.current_platforms}'. To run it anyway, export it with "
            "disabled_checks=[jaxport.DisabledSafetyCheck.platform()]."
        )


class DeviceCountError(JaxportError, ValueError):
    """The function is called with another number of devices than exported for."""

    def __init__(self, fun_name: str, exported: int, current: int) -> None:
        self.exported_devices = exported
        self.current_devices = current
        super().__init__(
            f"Function {fun_name} was exported for {exported} devices and is called in a "
            f"context with {current} devices, which is not allowed. Under jax.jit, place the "
            "arguments on a mesh of that size, e.g. with jax.device_put(x, s) for s in "
            "exported.in_shardings_jax(mesh).")


class MeshMismatchError(JaxportError, ValueError):
    """A mesh whose axes differ from those of the mesh the function was exported for."""

    def __init__(self, given: str, exported: str) -> None:
        super().__init__(
            f"NamedSharding new mesh {given} does not match the mesh used for export {exported}: "
            "the axis names, sizes and types must be the same.")


class ShardingMismatchError(CallError):
    """An argument's shape cannot be split as its recorded sharding says."""

    def __init__(self, where: str, dim: int, size: int, axes: tuple[str, ...], parts: int) -> None:
        super().__init__(
            f"The sharding recorded for {where} splits dimension {dim} over mesh axes "
            f"{axes} into {parts} parts, but that dimension has size {size}, which is not "
            f"divisible by {parts}.")


class VjpUnavailableError(JaxportError, ValueError):
    """Differentiation needs an exported VJP that this object does not carry."""


class ArtifactError(JaxportError, ValueError):
    """Bytes that are not a valid jaxport / jax.export artifact."""


class NonStringKeyError(JaxportError, TypeError):
    """A dict in a pytree to serialize has a key that is not a string.

    The artifact format (``jax.export``'s) stores dict keys as strings only.
    ``where`` names the entry, e.g. ``args[0]['layers'][0]``.
    """

    def __init__(self, where: str, key: object) -> None:
        self.where = where
        self.key = key
        super().__init__(
            "Serialization is supported only for dictionaries with string keys. "
            f"Found key {key!r} of type {type(key)} at {where}. The artifact format (that of "
            "jax.export) stores dict keys as strings only: give this dict string keys, or make it "
            "a list when its keys are 0, 1, ... (jaxport.plain_tree does so for a whole pytree; "
            "an nnx.State as nnx.split gives it, nnx.List layers included, needs no change)")


class ArtifactCallError(JaxportError, RuntimeError):
    """Calling an exported function failed below jaxport (lowering its module, XLA, the runtime).

    The message names the function and keeps the original error's type and text.
    """

    def __init__(self, fun_name: str, cause: BaseException) -> None:
        self.fun_name = fun_name
        super().__init__(
            f"Calling the exported function '{fun_name}' failed: {type(cause).__name__}: {cause}")


class ArtifactCallValueError(ArtifactCallError, ValueError):
    """An :class:`ArtifactCallError` whose cause was a ``ValueError`` (as JAX's "Error refining shapes")."""


class DonationError(JaxportError, ValueError):
    """A donating call asked of an export whose module donates none of its inputs."""


class EffectSerializationError(JaxportError, NotImplementedError):
    """An effect that cannot be serialized: its class must rebuild an equal effect from nothing."""

    def __init__(self, effect: str, requirement: str) -> None:
        super().__init__(f"Effect {effect} must {requirement}")


class PartitionerMismatchError(JaxportError, ValueError):
    """A module partitioned with Shardy, called while JAX partitions with GSPMD."""

    def __init__(self) -> None:
        super().__init__(
            "The function was exported with shardy enabled but you are calling it with Shardy "
            "disabled. Please enable Shardy using `--jax_use_shardy_partitioner=True`.")


class UsageError(JaxportError, ValueError):
    """An argument or option (of a command, or of a call such as ``load_converted``'s runtime
    options) names something that does not exist or does not fit."""


class ConsumerMismatchError(JaxportError, ValueError):
    """An artifact cannot be written for the consumer asked (``consumer="jax==0.9.2"``): the
    consumer would not read or run what it needs (an operation its StableHLO lacks, a calling
    convention outside its window, a field of the format its reader does not know).

    Raised before anything is written. Attributes: ``consumer`` (``"JAX 0.9.2"``),
    ``function`` (the function's name) and ``reasons`` (why, one per thing).
    """

    def __init__(self, consumer: str, function: str, reasons: Sequence[str]) -> None:
        self.consumer = consumer
        self.function = function
        self.reasons = tuple(reasons)
        super().__init__(f"Cannot write the function '{function}' for {consumer}: {'; '.join(self.reasons)}")


class ExportedFieldError(JaxportError, TypeError, ValueError):
    """``Exported(...)`` built from ``jax.export.Exported``'s keyword fields was given a field it
    does not have, lacks one, or holds a value that does not fit. Attribute: ``field``, its name.

    A ``TypeError`` as Python's own for a wrong keyword, and a ``ValueError`` for a value.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        super().__init__(f"Exported() field '{field}': {reason}")


class ArrayFileError(JaxportError, ValueError):
    """An array file cannot be read or does not hold what ``jaxport run`` expects."""
class CacheConfigError(JaxportError, ValueError):
    """JAX's persistent compilation cache is not configured so that ``warm`` can fill it.

    No cache directory is set, JAX's thresholds kept it from writing the
    entry, or JAX decided at this process's first compilation that its cache
    was off. The message says which setting to change.
    """


class ConversionError(JaxportError, ValueError):
    """An artifact or a bundle cannot be converted for another runtime as asked.

    Raised before anything is written. Attributes: ``function`` (the
    function's name, None for the whole source), ``where`` (the argument or
    result, such as ``args[1]['w']``, or None) and ``reason``.
    """

    def __init__(self, target: str, function: str | None, reason: str, *, where: str | None = None) -> None:
        self.function = function
        self.where = where
        self.reason = reason
        subject = f"the function '{function}'" if function is not None else "the source"
        at = f" ({where})" if where is not None else ""
        super().__init__(f"Cannot convert {subject} to {target}{at}: {reason}")


class UnsupportedOperationError(ConversionError):
    """An operation of the module that the target cannot express exactly (refused, never approximated).

    Attributes (besides :class:`ConversionError`'s): ``operation`` (the
    operation's name, with a custom call's target: ``stablehlo.custom_call
    @lapack_sgetrf_ffi``) and ``location`` (its source location in the module).
    """

    def __init__(self, target: str, function: str | None, operation: str, location: str,
                 detail: str = "") -> None:
        self.operation = operation
        self.location = location
        why = f": {detail}" if detail else ""
        super().__init__(target, function, f"the operation {operation} at {location} has no "
                                           f"translation{why}")


class MissingExtraError(JaxportError, ImportError):
    """An optional runtime that jaxport needs for this is not installed, or not a release of the range
    jaxport is tested on (``state`` says which); the message names the extra (``extra``)."""

    def __init__(self, what: str, extra: str, cause: BaseException | None = None, *,
                 state: str = "is not installed") -> None:
        self.extra = extra
        detail = f" ({type(cause).__name__}: {cause})" if cause is not None else ""
        super().__init__(f"{what} {state}{detail}: install it with "
                         f"pip install 'jaxport[{extra}]'")


# ---- Symbolic shapes: JAX's wording (an expression raises the inconclusive-comparison error its class names,
# DimExpr.inconclusive_error, so that the JAX adapter's subclass also inherits JAX's own class).

def inconclusive_explanation(docs: DocPages) -> str:
    """The explanation that ends an inconclusive comparison's message (as in jax.export)."""
    return ("This error arises for comparison operations with shapes that\n"
            "are non-constant, and the result of the operation cannot be represented as\n"
            "a boolean value for all values of the symbolic dimensions involved.\n"
            "\n"
            f"Please see {docs.shape_poly}#comparison-of-symbolic-dimensions-is-partially-supported\n"
            "for more details.\n")


def inconclusive_comparison(comparison: str, suggestion: str, scope: str | None, docs: DocPages) -> str:
    """The message of an inconclusive comparison (``"'b' >= '4'"``), as jax.export words it.

    Args:
        comparison: the comparison, its operands quoted.
        suggestion: the constraint that would decide it.
        scope: the scope's text when it holds constraints, else None.
        docs: the pages the message cites.
    """
    used = f"Using symbolic scope {scope}\n" if scope is not None else ""
    return (f"Symbolic dimension comparison {comparison} is inconclusive.\n"
            f"{used}{inconclusive_explanation(docs)}"
            f"If it holds for all the shapes you intend to use, consider adding the "
            f"constraint '{suggestion}' to the SymbolicScope.\n")


def not_constant(dim: str, docs: DocPages) -> str:
    """The message of a symbolic dimension used where a constant is required (``int(b)``)."""
    return (f"Symbolic dimension '{dim}' used in a context that requires a constant\n"
            + inconclusive_explanation(docs))


class InconclusiveDimensionError(JaxportError, ValueError):
    """A comparison or a conversion to ``int`` that symbolic reasoning cannot decide."""


class ScopeMixingError(JaxportError, ValueError):
    """Symbolic dimensions from different :class:`SymbolicScope` objects met in one operation."""

    def __init__(self, operation: str, expected: str, culprit: str, found: str, *, docs: DocPages,
                 expected_from: str = " ", culprit_from: str = "unknown") -> None:
        super().__init__(
            f"Invalid mixing of symbolic scopes {operation}.\n"
            f"Expected {expected_from}scope {expected}\n"
            f"and found for '{culprit}' ({culprit_from}) scope {found}\n"
            f"See {docs.shape_poly}#user-specified-symbolic-constraints."
        )


class ShapeSpecSyntaxError(JaxportError, ValueError):
    """A malformed symbolic shape specification."""

    def __init__(self, spec: str, dimension: int, reason: str, position: int) -> None:
        self.spec = spec
        self.dimension = dimension
        self.position = position
        super().__init__(
            f"syntax error in symbolic shape '{spec}' in dimension {dimension}: {reason}. "
            f"Parsed '{spec[:position]}', remaining '{spec[position:]}'."
        )


class ConstraintError(JaxportError, ValueError):
    """A symbolic constraint that is malformed, unsupported or unsatisfiable."""


class UnsolvableDimensionError(JaxportError, ValueError):
    """Dimension variables that cannot be computed from the argument shapes."""


class ShapeAssertionError(JaxportError, ValueError):
    """Actual argument shapes that violate the exported polymorphic specification."""


class DimensionEvaluationError(JaxportError, ValueError):
    """An expression refers to a dimension variable that has no value."""

    @classmethod
    def unknown_variable(cls, var: str, known: Sequence[str], docs: DocPages) -> DimensionEvaluationError:
        """The error for ``var``, absent from the argument shapes (which define ``known``), citing ``docs``."""
        return cls(
            f"Encountered dimension variable '{var}' that is not appearing in the shapes "
            "of the function arguments.\nThe following dimension variables are appearing "
            f"in the shapes of the function arguments: {list(known)}.\nPlease see "
            f"{docs.shape_poly}"
            "#dimension-variables-must-be-solvable-from-the-input-shapes for more details.")


class DimensionPowerError(JaxportError, ValueError):
    """A symbolic dimension raised to a negative or non-integer power."""

    def __init__(self, dim: str, power: object, kind: str) -> None:
        super().__init__(f"Symbolic dimension cannot be raised to {kind} powers: '{dim}' ** '{power}'")


class ShapeSpecTypeError(JaxportError, ValueError):
    """A shape specification that is neither None nor a string (JAX raises ValueError)."""

    def __init__(self, spec: object) -> None:
        super().__init__(f"polymorphic shape spec should be None or a string. Found {spec!r}.")


# ---- Calls on a runtime target.

class TargetMismatchError(JaxportError, ValueError):
    """Compiled modules made for another machine than this one.

    Attributes:
        compiled_for: what the modules were compiled for, in words.
        host: this machine, in words.
    """

    def __init__(self, path: str, compiled_for: str, host: str, missing: Sequence[str] = ()) -> None:
        self.compiled_for = compiled_for
        self.host = host
        lacks = f"; this CPU lacks {', '.join(missing)}" if missing else ""
        super().__init__(
            f"{path} was compiled for {compiled_for}, which this machine ({host}) cannot run"
            f"{lacks}. Convert the artifact again on this machine, or with a target it runs "
            "(jaxport convert --target-cpu / --target-triple).")


class UncompiledSizeError(CallError):
    """A call whose dimension variables take values that no compiled module was made for.

    Attributes:
        function: the function's name.
        variable: the first variable whose value no module has, with that value.
        compiled: the bindings compiled for, in order.
    """

    def __init__(self, function: str, variable: str, value: int,
                 compiled: Sequence[Mapping[str, int]]) -> None:
        self.function = function
        self.variable = variable
        self.compiled = tuple(dict(b) for b in compiled)
        listing = ", ".join(_binding_text(b) for b in self.compiled)
        super().__init__(
            f"No module of '{function}' was compiled for {variable} = {value}; it was compiled "
            f"for {listing}. Convert it again with this size in dims= (--dims "
            f"{function}:{variable}={value}).")


def _binding_text(binding: Mapping[str, int]) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in sorted(binding.items())) + "}"


class ArgSpecError(JaxportError, ValueError):
    """A command-line array spec (``--arg``, ``--kwarg``) does not parse."""


class GenerationSpecError(BundleError):
    """A generation spec does not match the functions it names (a cache leaf missing from a
    function's results, an axis beyond a leaf's rank, a maximum length the prefill refuses).

    Raised at save, before anything is written. Attributes: ``where`` (the function, or the
    cache leaf as ``cache['layers'][0]['k']``, that the spec does not fit).
    """

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        super().__init__(f"The generation spec does not fit {where}: {detail}")


class GenerationError(JaxportError, ValueError):
    """A call of ``generate`` asks what the model cannot do (an empty prompt, a token outside the
    vocabulary, more tokens than the cache holds, a bad sampling option, text without a tokenizer).

    Attributes: ``argument`` (the argument at fault, ``prompt[1]``, ``top_p``), ``detail`` (what is
    wrong with it: the message without the prefixes, as a server says it).
    """

    def __init__(self, argument: str, detail: str) -> None:
        self.argument = argument
        self.detail = detail
        super().__init__(f"generate: {argument}: {detail}")


class SchedulerBusyError(JaxportError, RuntimeError):
    """A generation server's queue is full, or it is draining: the request was not admitted.

    Attributes: ``retry_after`` (seconds after which a retry may be admitted; None while draining).
    """

    def __init__(self, detail: str, retry_after: float | None) -> None:
        self.retry_after = retry_after
        super().__init__(detail)
