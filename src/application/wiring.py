"""The composition root: the long-lived objects that jaxport's services run on.

This is the one place that chooses the adapters and builds them; the services
are handed them here. Each object is built on its first use and then kept for
the process:

* the export service's ports: the JAX lowerer and the StableHLO module port,
  which the verifier and the command line use too (the export service is made
  from them: :func:`export_service`);
* the verifying process that parses untrusted modules, with the limits that
  ``JAXPORT_VERIFY_CPU_SECONDS`` and ``JAXPORT_VERIFY_TIMEOUT`` set, and the
  forms of modules it writes;
* the store of verification verdicts, and the known files remembered in it;
* what opens the directories jaxport wrote, on the known files;
* the services on them: the artifact verifier, the conversion pipeline, the
  bundles' loader (on the artifact verifier), the directory verifier, the
  converted directories' loader (on the targets' adapters) and the generator
  factory (on that loader, the checked calls' step runner, the sampler, the
  tokenizer, the chat template and the schedulers).

Each adapter is typed with its port (:mod:`jaxport.domain.ports`,
:mod:`jaxport.domain.opened_directory`), not its class.

Each target's adapters are typed lazy factories beside this module, one entry a target
(:mod:`jaxport.application.target_adapters`), handed to the loader here. A service is a frozen dataclass
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
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from jaxport.adapters.jax.lowering.lower import JaxLowering
    from jaxport.adapters.jax.lowering.service import ExportService
    from jaxport.adapters.mlir.rewrite import ChildModuleForms
    from jaxport.application.bundles.load import BundleLoader
    from jaxport.application.conversion.pipeline import ConversionPipeline
    from jaxport.application.conversion.loader import ConvertedLoader
    from jaxport.application.conversion.verify_directory import DirectoryVerifier
    from jaxport.application.export.verifier import ArtifactVerifier
    from jaxport.application.generation.factory import GeneratorFactory
    from jaxport.application.upgrade.service import UpgradeService
    from jaxport.domain.opened_directory import Directories
    from jaxport.domain.ports import KnownFiles, Lowerer, ModuleWorker, StableHlo, VerdictStore
    from jaxport.domain.generation.ports import ChatTemplate, TextCodec

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
def upgrade_service() -> UpgradeService:
    """The upgrade service, on the verifying process's forms of modules."""
    from jaxport.application.upgrade.service import UpgradeService

    return UpgradeService(module_forms())


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
def directories() -> Directories:
    """What opens the directories jaxport wrote, each once, on :func:`known_files`."""
    from jaxport.adapters.storage.opened_directory import DiskDirectories

    return DiskDirectories(known_files())


@_built_once
def bundle_loader() -> BundleLoader:
    """What loads bundles, on :func:`directories`, the default pytree registry and :func:`artifact_verifier`."""
    from jaxport.adapters.jax.trees.registry import default_registry
    from jaxport.application.bundles.load import BundleLoader

    return BundleLoader(directories(), default_registry(), artifact_verifier())


@_built_once
def directory_verifier() -> DirectoryVerifier:
    """What verifies converted directories in an isolated child, its verdicts in :func:`verdict_store`."""
    from jaxport.application.conversion.verify_directory import DirectoryVerifier

    return DirectoryVerifier(verdict_store())


@_built_once
def converted_loader() -> ConvertedLoader:
    """What loads and verifies converted directories, on :func:`directories`, :func:`directory_verifier` and the
    targets' adapters, and loads bundles with :func:`bundle_loader` (built when a bundle is first loaded: JAX)."""
    from jaxport.application.conversion.loader import ConvertedLoader
    from jaxport.application.target_adapters import ADAPTERS

    return ConvertedLoader(directories(), directory_verifier(), ADAPTERS, lambda bundle: bundle_loader().load(bundle))


@_built_once
def generator_factory() -> GeneratorFactory:
    """What makes generators, on :func:`converted_loader`, the checked calls' step runner, NumPy's sampler,
    Hugging Face's tokenizers and Jinja2's chat templates, and serves them with the schedulers."""
    from jaxport.adapters.numpy.sampling import NumpySampler
    from jaxport.application.generation.factory import GeneratorFactory
    from jaxport.application.generation.schedulers import scheduler_for
    from jaxport.application.target_adapters import host_steps

    return GeneratorFactory(converted_loader(), host_steps, NumpySampler, text_codec, chat_template,
                            scheduler_for)


def text_codec(blob: bytes, where: str) -> TextCodec:
    """The tokenizer that a ``tokenizer.json``'s bytes describe (Hugging Face's tokenizers)."""
    from jaxport.adapters.tokenizers.codec import HuggingFaceTokenizer

    return HuggingFaceTokenizer.from_bytes(blob, where)


def chat_template(template: str, where: str) -> ChatTemplate:
    """A chat template (``where``: what it is, for messages), compiled and rendered in Jinja2's sandbox in
    isolated processes under bounds of time, memory and output."""
    from jaxport.adapters.jinja.chat import JinjaChatTemplate

    return JinjaChatTemplate(template, where)
