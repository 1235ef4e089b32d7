"""The composition root: the long-lived objects that jaxport's services run on.

This is the one place that chooses the adapters and builds them; every service
asks here. Each object is built on its first use and then kept for the
process:

* the export service's ports: the JAX lowerer and the StableHLO module port,
  which the verifier and the command line use too (the export service is made
  from them: :func:`export_service`);
* the verifying process that parses untrusted modules, with the limits that
  ``JAXPORT_VERIFY_CPU_SECONDS`` and ``JAXPORT_VERIFY_TIMEOUT`` set, and the
  forms of modules it writes;
* the store of verification verdicts, and the known files remembered in it;
* the services on them: the artifact verifier, the conversion pipeline, the
  bundles' loader (on the artifact verifier), the directory verifier and the
  converted directories' loader.

Each is typed with its port (:mod:`jaxport.domain.ports`), not its adapter's class.

Each target's adapters are typed lazy factories beside this module
(:mod:`jaxport.application.target_adapters`). A service is a frozen dataclass
of its ports, built here (a test makes its own on its own ports); its public
function, in a thin module beside its callers, asks here for it. The modules
that define the services never import this one (no import cycle,
tests/unit/test_import_graph.py).

Importing this module builds nothing and imports neither JAX nor any adapter
(each is imported when first asked for).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from jaxport.adapters.jax.lowering.lower import JaxLowering
    from jaxport.adapters.jax.lowering.service import ExportService
    from jaxport.adapters.mlir.rewrite import ChildModuleForms
    from jaxport.application.bundles.load import BundleLoader
    from jaxport.application.conversion.pipeline import ConversionPipeline
    from jaxport.application.conversion.model import ConvertedLoader
    from jaxport.application.conversion.verify_directory import DirectoryVerifier
    from jaxport.application.export.verifier import ArtifactVerifier
    from jaxport.domain.ports import KnownFiles, Lowerer, ModuleWorker, StableHlo, VerdictStore
    from jaxport.adapters.jax.bundles.loaded import Bundle
    from jaxport.domain.generation.ports import ChatTemplate, SamplerFactory, StepRunner, TextCodec
    from jaxport.domain.generation.spec import GenerationSpec, StepInput
    from jaxport.domain.converted.manifest import ConvertedManifest, Variant
    from jaxport.domain.targets.ports import TargetRuntime

_T = TypeVar("_T")


def _built_once(build: Callable[[], _T]) -> Callable[[], _T]:
    """``build``'s result, built on the first call; threads racing on it get the same object."""
    cached = functools.cache(build)
    lock = threading.Lock()

    @functools.wraps(build)
    def get() -> _T:
        with lock:
            return cached()

    return get


@_built_once
def export_service() -> ExportService:
    """The export service, on the lowerer and the StableHLO port below."""
    from jaxport.adapters.jax.lowering.service import ExportService

    return ExportService(lowerer(), stablehlo())


@_built_once
def lowerer() -> Lowerer[JaxLowering]:
    """What traces and lowers functions for the export service."""
    from jaxport.adapters.jax.lowering.lower import JaxLowerer

    return JaxLowerer()


@_built_once
def stablehlo() -> StableHlo:
    """What walks, wraps, serializes and reads StableHLO modules."""
    from jaxport.adapters.mlir.module import MlirStableHlo

    return MlirStableHlo()


def module_worker() -> ModuleWorker:
    """The process-wide verifying process (it starts on its first request)."""
    from jaxport.adapters.mlir.worker import shared_worker

    return shared_worker()


def module_forms() -> ChildModuleForms:
    """The forms of modules that :func:`module_worker` writes (for converters, and for consumers)."""
    from jaxport.adapters.mlir.rewrite import shared_forms

    return shared_forms()


@_built_once
def verdict_store() -> VerdictStore:
    """Where verification verdicts are remembered (the directory is read on each use)."""
    from jaxport.adapters.storage.verdict_store import FileVerdictStore

    return FileVerdictStore()


@_built_once
def known_files() -> KnownFiles:
    """The files whose digests were checked before, remembered in :func:`verdict_store`."""
    from jaxport.adapters.storage.checked_directory import StatKnownFiles

    return StatKnownFiles(verdict_store())


@_built_once
def artifact_verifier() -> ArtifactVerifier:
    """What verifies artifacts in the verifying process, its verdicts in :func:`verdict_store`."""
    from jaxport.application.export.verifier import ArtifactVerifier

    return ArtifactVerifier(verdict_store(), stablehlo(), module_worker())


@_built_once
def conversion_pipeline() -> ConversionPipeline:
    """What converts sources for runtime targets, on :func:`module_worker`, :func:`module_forms` and
    :func:`converted_loader` (which runs a quantized directory's golden examples)."""
    from jaxport.application.conversion.pipeline import ConversionPipeline

    return ConversionPipeline(module_worker(), module_forms(), converted_loader())


@_built_once
def bundle_loader() -> BundleLoader:
    """What loads bundles, on :func:`known_files`, the default pytree registry and :func:`artifact_verifier`."""
    from jaxport.adapters.jax.trees.registry import default_registry
    from jaxport.application.bundles.load import BundleLoader

    return BundleLoader(known_files(), default_registry(), artifact_verifier())


@_built_once
def directory_verifier() -> DirectoryVerifier:
    """What verifies converted directories in an isolated child, its verdicts in :func:`verdict_store`."""
    from jaxport.application.conversion.verify_directory import DirectoryVerifier

    return DirectoryVerifier(verdict_store())


@_built_once
def converted_loader() -> ConvertedLoader:
    """What loads and verifies converted directories, on :func:`known_files` and :func:`directory_verifier`."""
    from jaxport.application.conversion.model import ConvertedLoader

    return ConvertedLoader(known_files(), directory_verifier())



def jax_step_runner(bundle: Bundle, spec: GenerationSpec) -> StepRunner:
    """The runner of a generative bundle's steps on JAX (the cache donated to each step)."""
    from jaxport.adapters.jax.bundles.generation import JaxStepRunner

    return JaxStepRunner(bundle, spec)


def onnx_step_runner(runtime: TargetRuntime, manifest: ConvertedManifest, spec: GenerationSpec) -> StepRunner:
    """The runner of a converted ONNX directory's steps on ONNX Runtime (the cache in its buffers), in the
    sessions of ``runtime`` (the directory loaded)."""
    from jaxport.adapters.onnx.generation import OnnxStepRunner
    from jaxport.adapters.onnx.runtime import OnnxTargetRuntime

    assert isinstance(runtime, OnnxTargetRuntime), runtime
    return OnnxStepRunner(runtime, manifest, spec)


def litert_step_runner(root: str, manifest: ConvertedManifest, spec: GenerationSpec,
                       options: Mapping[str, Any]) -> StepRunner | None:
    """The runner of a converted LiteRT directory's steps on ``CompiledModel`` (the cache in its tensor
    buffers); None where it cannot run them (a model with dynamic dimensions, or one file per variant)."""
    from jaxport.adapters.litert.generation import LiteRtStepRunner, runs_compiled

    return LiteRtStepRunner(root, manifest, spec, options) if runs_compiled(manifest) else None


def savedmodel_step_runner(runtime: TargetRuntime, manifest: ConvertedManifest, spec: GenerationSpec) -> StepRunner:
    """The runner of a converted SavedModel directory's steps on its loaded runtime (the cache in
    TensorFlow's tensors)."""
    from jaxport.adapters.savedmodel.generation import TfStepRunner
    from jaxport.adapters.savedmodel.runtime import TfRuntime

    assert isinstance(runtime, TfRuntime)
    return TfStepRunner(runtime, manifest, spec)


def host_step_runner(spec: GenerationSpec, calls: Mapping[str, Callable[[list[Any]], list[Any]]],
                     inputs: Mapping[str, tuple[Sequence[str], Sequence[int], Sequence[StepInput]]]) -> StepRunner:
    """The runner of any runtime's steps through flat calls of host arrays; ``inputs``: per function,
    its caller's flat dtypes and ranks, and its step inputs."""
    from jaxport.adapters.numpy.steps import HostStepRunner, host_inputs

    return HostStepRunner(spec, calls, {name: host_inputs(kinds, dtypes, ranks)
                                        for name, (dtypes, ranks, kinds) in inputs.items()})


def iree_device_calls(runtime: TargetRuntime, variants: Mapping[str, Callable[[list[Any]], Variant]]
                      ) -> dict[str, Callable[[list[Any]], list[Any]]]:
    """Per function, the flat call of an IREE directory's ``runtime`` whose results stay IREE's device
    arrays (for :func:`host_step_runner`: the cache is never copied to the host between steps);
    ``variants``: per function, what checks a call's flat arrays and picks its variant."""
    from jaxport.adapters.iree.generation import device_calls
    from jaxport.adapters.iree.runtime import IreeRuntime

    assert isinstance(runtime, IreeRuntime), runtime
    return device_calls(runtime, variants)


def text_codec(blob: bytes, where: str) -> TextCodec:
    """The tokenizer that a ``tokenizer.json``'s bytes describe (Hugging Face's tokenizers)."""
    from jaxport.adapters.tokenizers.codec import HuggingFaceTokenizer

    return HuggingFaceTokenizer.from_bytes(blob, where)


def chat_template(template: str) -> ChatTemplate:
    """A chat template, parsed (Jinja2's sandbox)."""
    from jaxport.adapters.jinja.chat import JinjaChatTemplate

    return JinjaChatTemplate(template)


def sampler_factory() -> SamplerFactory:
    """What picks the next tokens on the host (NumPy)."""
    from jaxport.adapters.numpy.sampling import NumpySampler

    return NumpySampler
