"""The two ports of a runtime target: its converter and its runtime, and what travels through them.

A runtime target (TensorFlow SavedModels, IREE, ONNX Runtime, LiteRT...) is
a converter adapter, a runtime adapter, a small domain plan of what it
refuses (:class:`~.plan.TargetPlan`) and one registry entry
(:mod:`jaxport.domain.targets.registry`). The conversion pipeline reads the source, verifies every
module (in the verifying child, which also walks it for custom calls), runs
the plan's refusals and checks the bindings once, then hands the converter a
:class:`ConversionJob` and a fresh, empty staging directory (the converter
repeats no check of the plan); it digests every file, writes the manifest
and moves the directory into place. The loader checks the directory against
its manifest and the host against the plan, then opens the runtime; the
call front checks every call (tree, dtypes, ranks, shapes, dimension
variables, constraints, the variant) before the runtime runs it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.calls.signature import Signature
from jaxport.domain.converted.manifest import ConvertedManifest, Variant, WeightsTable
from jaxport.domain.ports import HostArray
from jaxport.domain.converted.static_shapes import StaticShapes

if TYPE_CHECKING:  # a converted directory's loader needs no quantization
    from jaxport.domain.converted.quantization import WeightQuantization
    from jaxport.domain.generation.spec import GenerationSpec


@dataclass(frozen=True, slots=True)
class FunctionJob:
    """One function to convert.

    Attributes:
        name: its name in the directory (a lone artifact's is the exported function's).
        record: its verified record, weights included (modules as the
            verifying child re-serialized them; ``record.vjp`` may be there).
        signature: what its callers give and get (the bound weights left out).
        custom_calls: the custom-call targets of its module, found by the
            verifying child's walk of the parsed module.
        shapes: the static shapes of each variant to make, one per binding of the
            dimension variables (one, unbound, for a static function), each binding
            checked by the pipeline (:func:`~.plan.variant_shapes`); empty: one
            variant of any size (a runtime that takes any size, or LiteRT's dynamic model).
        uses_shardy: whether its modules use the Shardy dialect (the walk found ``sdy.`` operations).
    """

    name: str
    record: ArtifactRecord
    signature: Signature
    custom_calls: tuple[str, ...]
    shapes: tuple[StaticShapes, ...]
    uses_shardy: bool = False


@dataclass(frozen=True, slots=True)
class ConversionJob:
    """Everything a converter writes from.

    Attributes:
        functions: in the source's order.
        weights: the weights the functions bind (None without).
        weights_path: a safetensors file holding them, ``""`` without; the
            converter copies it or reads it (memory-mapped), never changes it.
        options: the target's options (its class is the registry entry's).
        default: the function a runtime calls when a request names none.
        forms: the other forms of a module a converter may need, made by the
            verifying child (the converting process parses no module itself).
        calibration: for a quantization calibrated on examples, per function its
            examples as the caller's flat arrays (checked against its signature).
        generation: a generative bundle's spec (None for any other source): a target
            may lay its files out for generation (LiteRT: one model, the weights shared).
    """

    functions: tuple[FunctionJob, ...]
    weights: WeightsTable | None
    weights_path: str
    options: Any
    default: str | None
    forms: ModuleForms
    calibration: Mapping[str, Sequence[Sequence[HostArray]]] = field(default_factory=dict)
    generation: GenerationSpec | None = None


class ModuleForms(Protocol):
    """What a converter asks of the verifying child: another form of a module of its job.

    The child verifies the bytes it is given before it makes anything of them.
    """

    def for_version(self, module: bytes, version: str) -> bytes:
        """``module`` written for the StableHLO ``version`` when it was written for a newer one
        (as it is when it is not, or when it uses operations newer than ``version``: the
        runtime's own check then refuses it with its reason).

        Raises:
            ArtifactError: the module does not verify, or the child stopped.
        """

    def specialized(self, record: ArtifactRecord, shapes: StaticShapes, platform_index: int | None) -> bytes:
        """``record``'s module for the static ``shapes``, taking every flat input, refined by JAX
        (its CPU branch kept, for a multi-platform module): a portable artifact.

        Raises:
            ValueError: JAX's refinement refused the module for these shapes.
            ArtifactError: the module does not verify, or the child stopped.
        """


@dataclass(frozen=True, slots=True)
class ConvertedParts:
    """What a converter wrote: the manifest's target-owned parts.

    Attributes:
        target_details: what the target records of itself (a JSON object).
        variants: function name -> its variants (files relative to the directory's root).
        weights_file: the weights' safetensors file if the directory keeps it as
            one (``params.safetensors``), ``""`` when the target holds them in its own form.
        quantized: for a quantized conversion, each weight the mode could quantize, whether it
            did and its measured contribution (empty where the converter does not report them).
    """

    target_details: Mapping[str, Any]
    variants: Mapping[str, tuple[Variant, ...]]
    weights_file: str = ""
    quantized: tuple[WeightQuantization, ...] = ()


class Converter(Protocol):
    """Writes a target's files for a job (the registry names it ``"module:attribute"``)."""

    def __call__(self, job: ConversionJob, staging: str) -> ConvertedParts:
        """Writes the files of ``job`` under ``staging`` (an empty directory) and says what it wrote.

        Raises:
            ConversionError: the target's own tool refused a function (naming it).
            MissingExtraError: the target's extra is not installed.
        """


class TargetRuntime(Protocol):
    """Runs the variants of a loaded directory on flat host arrays; checks nothing (the front did).

    The front has checked the call against the manifest's signature (count,
    dtypes, ranks, shapes, constraints) and picked the variant; the loader
    has checked the directory's files against that same signature, so a
    runtime only translates its library's errors (at its edge, once).
    """

    def run(self, function: str, variant: Variant, args: Sequence[HostArray]) -> list[HostArray]:
        """The flat results of ``variant`` of ``function`` for the caller's flat arrays ``args``
        (the bound weights are the runtime's), in the exported dtypes (bfloat16 as bfloat16).

        Raises:
            ArtifactCallError: the runtime's library failed (its message kept).
        """


@runtime_checkable
class WeightsRuntime(Protocol):
    """A runtime whose target holds the weights in its own form (a SavedModel's variables), not in a
    weights file: it reads them back, so that a loaded directory's ``params`` are the same on every target."""

    def params(self) -> dict[str, HostArray]:
        """The weights by key path (``"dense/w"``), in the manifest's order, as stored (a PRNG key as its key data)."""


_R_co = TypeVar("_R_co", covariant=True)


class RuntimeLoader(Protocol[_R_co]):
    """Opens a checked directory (its target's entry in :mod:`jaxport.application.target_adapters` names it),
    into the target's runtime ``_R_co``."""

    def __call__(self, root: str, manifest: ConvertedManifest, options: Mapping[str, Any]) -> _R_co:
        """The runtime of the directory ``root``, whose files matched ``manifest`` (digests checked).

        ``options`` are the runtime's own (IREE's ``driver``), as the caller of
        ``jaxport.load_converted`` gave them. Every check of the files that
        the runtime's library makes possible (that each model opens, holds
        the manifest's signature, reads only the directory's files) runs
        here, before the first call.

        Raises:
            UsageError: an option is unknown or has a bad value.
            ArtifactError: the runtime's library cannot open a file, or a file
                does not hold what the manifest says (the message names it).
            MissingExtraError: the target's extra is not installed.
        """


class HostFacts(Protocol):
    """What a runtime adapter says of this machine for its plan's host check (module:attribute)."""

    def __call__(self) -> Mapping[str, Any]:
        """Facts by name (``{"arch": "x86_64", "cpu_features": {"avx2": True}}``)."""
