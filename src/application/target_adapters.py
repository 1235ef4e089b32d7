"""Each target's adapters, one entry a target, as typed lazy factories beside the composition root.

The targets' registry (:mod:`jaxport.domain.targets.registry`) holds the
domain facts of each target; this table gives, by the same name, what runs
it: the factories of its converter, its runtime and (for a plan with a host
check) its host facts, the runner of a generative model's steps on the
runtime it loaded, and the runtime options that generation runs with. Bundles
are one more entry, :data:`JAX` (their steps on JAX; a bundle is loaded by
:class:`~jaxport.application.bundles.load.BundleLoader`), and no conversion
target. Each factory imports its adapter when called, so that loading a
converted directory imports only its own runtime (never jaxlib); each entry
is typed with its runtime, so that mypy checks each factory against its port
and the runner against the runtime it runs on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from jaxport.domain.errors import MissingExtraError, UsageError

_P = TypeVar("_P")
_R = TypeVar("_R")

if TYPE_CHECKING:
    from jaxport.adapters.iree.runtime import IreeRuntime
    from jaxport.adapters.jax.bundles.loaded import Bundle
    from jaxport.adapters.litert.runtime import LiteRtRuntime
    from jaxport.adapters.onnx.runtime import OnnxTargetRuntime
    from jaxport.adapters.savedmodel.runtime import TfRuntime
    from jaxport.application.conversion.model import ConvertedModel
    from jaxport.domain.converted.manifest import Variant
    from jaxport.domain.generation.ports import StepRunner
    from jaxport.domain.generation.spec import GenerationSpec
    from jaxport.domain.targets.ports import Converter, HostFacts, RuntimeLoader
    from jaxport.domain.targets.registry import TargetEntry

    #: Builds the runner of a generative model's steps on the runtime the model was loaded on, or gives None
    #: where it cannot run them (they then run through the model's checked calls: :func:`host_steps`).
    StepRunners = Callable[[_R, ConvertedModel, GenerationSpec], StepRunner | None]

#: The entry of bundles, run by JAX (a model's ``target`` then; no conversion target).
JAX = "jax"


@dataclass(frozen=True, slots=True)
class TargetAdapters(Generic[_R]):
    """One target's adapters, typed with its runtime ``_R`` (each factory imports its module when called).

    Attributes:
        runtime: the factory of its runtime loader (None: :data:`JAX`'s, whose runtime is JAX itself).
        steps: builds a generative model's step runner on a runtime this entry loaded (None: the steps run
            through the model's checked calls).
        converter: the factory of its converter (None: not a conversion target).
        host_facts: the factory of what its runtime says of this machine, for its plan's host check.
        generation_options: runtime options that generation runs with, unless the caller gives them.
    """

    runtime: Callable[[], RuntimeLoader[_R]] | None = None
    steps: StepRunners[_R] | None = None
    converter: Callable[[], Converter] | None = None
    host_facts: Callable[[], HostFacts] | None = None
    generation_options: Mapping[str, Any] = field(default_factory=dict)


# Each adapter is imported when its target is used: another target's converter or runtime never loads
# (tests/e2e/test_converted_load_imports.py, test_conversion_imports.py).
def _savedmodel_converter() -> Converter:
    from jaxport.adapters.savedmodel.converter import convert
    return convert


def _savedmodel_runtime() -> RuntimeLoader[TfRuntime]:
    from jaxport.adapters.savedmodel.runtime import load
    return load


def _savedmodel_host() -> HostFacts:
    from jaxport.adapters.savedmodel.runtime import host_facts
    return host_facts


def _savedmodel_steps(runtime: TfRuntime, model: ConvertedModel, spec: GenerationSpec) -> StepRunner:
    from jaxport.adapters.savedmodel.generation import TfStepRunner  # the cache in TensorFlow's tensors
    return TfStepRunner(runtime, model.manifest, spec)


def _iree_converter() -> Converter:
    from jaxport.adapters.iree.converter import convert
    return convert


def _iree_runtime() -> RuntimeLoader[IreeRuntime]:
    from jaxport.adapters.iree.runtime import load
    return load


def _iree_host() -> HostFacts:
    from jaxport.adapters.iree.runtime import host_facts
    return host_facts


def _iree_steps(runtime: IreeRuntime, model: ConvertedModel, spec: GenerationSpec) -> StepRunner:
    # The checked calls whose results stay IREE's device arrays: the cache never goes to the host between steps.
    return host_steps(model, spec, runtime.run_on_device)


def _onnx_converter() -> Converter:
    from jaxport.adapters.onnx.converter import convert
    return convert


def _onnx_runtime() -> RuntimeLoader[OnnxTargetRuntime]:
    from jaxport.adapters.onnx.runtime import load
    return load


def _onnx_steps(runtime: OnnxTargetRuntime, model: ConvertedModel, spec: GenerationSpec) -> StepRunner:
    from jaxport.adapters.onnx.generation import OnnxStepRunner  # I/O binding, in the sessions of the runtime
    return OnnxStepRunner(runtime, model.manifest, spec)


def _litert_converter() -> Converter:
    from jaxport.adapters.litert.converter import convert
    return convert


def _litert_runtime() -> RuntimeLoader[LiteRtRuntime]:
    from jaxport.adapters.litert.runtime import load
    return load


def _litert_steps(runtime: LiteRtRuntime, model: ConvertedModel, spec: GenerationSpec) -> StepRunner | None:
    # CompiledModel's tensor buffers, where it runs the directory: one model of static shapes.
    from jaxport.adapters.litert.generation import LiteRtStepRunner, runs_compiled

    if model.directory is None or not runs_compiled(model.manifest):
        return None
    return LiteRtStepRunner(model.directory.opened_by_path(), model.manifest, spec, model.options)


def _jax_steps(bundle: Bundle, model: ConvertedModel, spec: GenerationSpec) -> StepRunner:
    from jaxport.adapters.jax.bundles.generation import JaxStepRunner  # each step jitted, the cache donated
    return JaxStepRunner(bundle, spec)


_SAVEDMODEL: TargetAdapters[TfRuntime] = TargetAdapters(_savedmodel_runtime, _savedmodel_steps, _savedmodel_converter,
                                                        _savedmodel_host)
# A decode step is small work: IREE's task pool hands it to its threads and waits for them, which cost
# more than they save (0.71x of jax.jit's tokens/s at batch 8 against 1.12x on the calling thread, on
# 2 cores): generation runs on the calling thread.
_IREE: TargetAdapters[IreeRuntime] = TargetAdapters(_iree_runtime, _iree_steps, _iree_converter, _iree_host,
                                                    {"driver": "local-sync"})
_ONNX: TargetAdapters[OnnxTargetRuntime] = TargetAdapters(_onnx_runtime, _onnx_steps, _onnx_converter)
_LITERT: TargetAdapters[LiteRtRuntime] = TargetAdapters(_litert_runtime, _litert_steps, _litert_converter)
_BUNDLES: TargetAdapters[Bundle] = TargetAdapters(steps=_jax_steps)

#: Every target's adapters, by the registry's name, and :data:`JAX` (a test checks both tables name the same
#: targets but this one).
ADAPTERS: Mapping[str, TargetAdapters[Any]] = {
    "savedmodel": _SAVEDMODEL, "iree": _IREE, "onnx": _ONNX, "litert": _LITERT, JAX: _BUNDLES,
}


def imported(entry: TargetEntry, factory: Callable[[], _P], what: str) -> _P:
    """What ``factory`` builds, its adapter imported now (``what``: the part, in the message).

    Raises:
        MissingExtraError: the target's extra is not installed (the message names it).
    """
    try:
        return factory()
    except MissingExtraError:
        raise
    except ImportError as exc:
        raise MissingExtraError(f"{what} {entry.plan.runtime}", entry.extra, exc) from exc


def converter(entry: TargetEntry) -> Converter:
    """The converter of ``entry``'s target, its module imported now (raises as :func:`imported`)."""
    factory = ADAPTERS[entry.name].converter
    if factory is None:
        raise UsageError(f"{entry.name} is not a conversion target")
    return imported(entry, factory, "The converter for")


def host_steps(model: ConvertedModel, spec: GenerationSpec,
               run: Callable[[str, Variant, list[Any]], list[Any]] | None = None) -> StepRunner:
    """The runner of any runtime's steps through ``model``'s checked flat calls, the cache held as their
    results (``run``: what runs a checked call's variant instead of the model's runtime, such as a runtime's
    call whose results stay on its device)."""
    from jaxport.adapters.numpy.steps import HostStepRunner, host_inputs

    def call(name: str) -> Callable[[list[Any]], list[Any]]:
        checked = model[name]
        return checked.run_flat if run is None else lambda leaves: run(name, checked.variant_of(leaves), leaves)

    inputs = {name: host_inputs(kinds, model.functions[name].signature.in_avals) for name, kinds in spec.steps}
    return HostStepRunner(spec, {name: call(name) for name in inputs}, inputs)
