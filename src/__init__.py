"""jaxport: export JAX functions to portable StableHLO artifacts and call them back.

``import jaxport`` is cheap: each public name loads its module on first use,
so tools that only inspect artifacts (``jaxport.inspect``) never import JAX.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jaxport.domain.artifact.info import ArtifactInfo as ArtifactInfo
    minimum_supported_calling_convention_version: int
    maximum_supported_calling_convention_version: int
    from jaxport.domain.artifact.safety import DisabledSafetyCheck as DisabledSafetyCheck
    from jaxport import errors as errors
    from jaxport.application.bundles.api import Bundle as Bundle
    from jaxport.domain.bundle.info import BundleInfo as BundleInfo
    from jaxport.application.bundles.api import load_bundle as load_bundle
    from jaxport.application.bundles.api import save_bundle as save_bundle
    from jaxport.application.conversion.numerics import check_numerics as check_numerics
    from jaxport.domain.converted.numerics import NumericsReport as NumericsReport
    from jaxport.application.verify_artifact import check_consumer as check_consumer
    from jaxport.application.export.service import export as export
    from jaxport.application.export.service import default_export_platform as default_export_platform
    from jaxport.adapters.jax.exported.exported import Exported as Exported
    from jaxport.adapters.jax.exported.exported import call_exported as call_exported
    from jaxport.application.artifact_files import load as load
    from jaxport.application.artifact_files import save as save
    from jaxport.application.upgrade.api import upgrade as upgrade
    from jaxport.application.upgrade.service import UpgradeReport as UpgradeReport
    from jaxport.application.inspection import inspect as inspect
    from jaxport.adapters.jax.trees.plain import plain_tree as plain_tree
    from jaxport.application.conversion.api import convert as convert
    from jaxport.domain.targets.registry import TARGETS as TARGETS
    from jaxport.application.conversion.targets import to_savedmodel as to_savedmodel
    from jaxport.application.conversion.targets import to_iree as to_iree
    from jaxport.application.conversion.targets import to_onnx as to_onnx
    from jaxport.application.conversion.targets import to_litert as to_litert
    from jaxport.domain.targets.savedmodel import SavedModelOptions as SavedModelOptions
    from jaxport.domain.targets.iree import IreeOptions as IreeOptions
    from jaxport.domain.targets.onnx import OnnxOptions as OnnxOptions
    from jaxport.domain.targets.litert import LiteRtOptions as LiteRtOptions
    from jaxport.application.conversion.model import ConvertedModel as ConvertedModel
    from jaxport.application.conversion.api import load_converted as load_converted
    from jaxport.application.conversion.api import load_iree as load_iree
    from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry as PytreeSerializationRegistry
    from jaxport.adapters.jax.trees.registry import register_namedtuple_serialization as register_namedtuple_serialization
    from jaxport.adapters.jax.trees.registry import register_pytree_node_serialization as register_pytree_node_serialization
    from jaxport.application.export.serialization import deserialize as deserialize
    from jaxport.application.serving.service import serve as serve
    from jaxport.application.serving.engines import ray_serve_app as ray_serve_app
    from jaxport.application.serving.engines import ray_data_map as ray_data_map
    from jaxport.application.serving.engines import beam_model_handler as beam_model_handler
    from jaxport.application.serving.batches import BatchModel as BatchModel
    from jaxport.application.serving.batches import BatchPredictor as BatchPredictor
    from jaxport.application.serving.batches import load_batches as load_batches
    from jaxport.adapters.jax.lowering.symbolic import poly_spec as poly_spec
    from jaxport.adapters.jax.lowering.symbolic import poly_specs as poly_specs
    from jaxport.adapters.jax.lowering.symbolic import symbolic_args_specs as symbolic_args_specs
    from jaxport.adapters.jax.lowering.symbolic import symbolic_shape as symbolic_shape
    from jaxport.application.export.verifier import VerificationReport as VerificationReport
    from jaxport.application.verify_artifact import verify_artifact as verify_artifact
    from jaxport.domain.symbolic import SymbolicScope as SymbolicScope
    from jaxport.domain.symbolic import is_symbolic_dim as is_symbolic_dim
    from jaxport.domain.generation.spec import GenerationSpec as GenerationSpec
    from jaxport.application.generation.api import load_generator as load_generator
    from jaxport.application.generation.generator import Generator as Generator
    #: This jaxport's version, read on first use from its one place,
    #: ``jaxport.domain.artifact.producer.JAXPORT_VERSION`` (pyproject.toml reads it there too).
    __version__: str

_LAZY = {
    # Each module -> its public names, loaded on first use (so `import jaxport` loads none of jaxport's modules).
    # One to_NAME and one options class per entry of TARGETS (tests/unit/test_target_registry.py checks);
    # `jaxport.inspect` needs no symbolic shapes (half of the import).
    "jaxport.domain.artifact.info": ("ArtifactInfo",),
    "jaxport.domain.bundle.info": ("BundleInfo",),
    "jaxport.domain.artifact.safety": ("DisabledSafetyCheck",),
    "jaxport.application.bundles.api": ("save_bundle", "load_bundle", "Bundle"),
    "jaxport.application.conversion.numerics": ("check_numerics",),
    "jaxport.domain.converted.numerics": ("NumericsReport",),
    "jaxport.application.export.service": ("export", "default_export_platform"),
    "jaxport.adapters.jax.exported.exported": ("Exported", "call_exported"),
    "jaxport.application.export.serialization": ("deserialize",),
    "jaxport.application.artifact_files": ("save", "load"),
    "jaxport.application.upgrade.api": ("upgrade",),
    "jaxport.application.upgrade.service": ("UpgradeReport",),
    "jaxport.application.inspection": ("inspect",),
    "jaxport.adapters.jax.trees.plain": ("plain_tree",),
    "jaxport.domain.targets.registry": ("TARGETS",),
    "jaxport.application.conversion.targets": ("to_savedmodel", "to_iree", "to_onnx", "to_litert"),
    "jaxport.domain.targets.savedmodel": ("SavedModelOptions",),
    "jaxport.domain.targets.iree": ("IreeOptions",),
    "jaxport.domain.targets.onnx": ("OnnxOptions",),
    "jaxport.domain.targets.litert": ("LiteRtOptions",),
    "jaxport.application.conversion.model": ("ConvertedModel",),
    "jaxport.application.conversion.api": ("convert", "load_converted", "load_iree"),
    "jaxport.adapters.jax.trees.registry": (
        "PytreeSerializationRegistry", "register_pytree_node_serialization", "register_namedtuple_serialization",
    ),
    "jaxport.application.serving.service": ("serve",),
    "jaxport.application.serving.engines": ("ray_serve_app", "ray_data_map", "beam_model_handler"),
    "jaxport.application.serving.batches": ("load_batches", "BatchModel", "BatchPredictor"),
    "jaxport.adapters.jax.lowering.symbolic": ("symbolic_shape", "symbolic_args_specs", "poly_spec", "poly_specs"),
    "jaxport.application.verify_artifact": ("verify_artifact", "check_consumer"),
    "jaxport.application.export.verifier": ("VerificationReport",),
    "jaxport.domain.symbolic": ("SymbolicScope", "is_symbolic_dim"),
    "jaxport.domain.generation.spec": ("GenerationSpec",),
    "jaxport.application.generation.api": ("load_generator",),
    "jaxport.application.generation.generator": ("Generator",),
    # "NAME=ATTRIBUTE": a constant read from its one home under another name: the calling-convention
    # versions this jaxport reads (and, at the maximum, writes); its version (not in __all__).
    "jaxport.domain.artifact.calling_convention": (
        "minimum_supported_calling_convention_version=MINIMUM_VERSION",
        "maximum_supported_calling_convention_version=MAXIMUM_VERSION",
    ),
    "jaxport.domain.artifact.producer": ("__version__=JAXPORT_VERSION",),
}
#: Each public name -> its module and its name there.
_WHERE = {name: (module, attribute or name) for module, names in _LAZY.items()
          for name, _, attribute in (entry.partition("=") for entry in names)}

__all__ = sorted(["errors", *(name for name in _WHERE if name != "__version__")])


def __getattr__(name: str) -> Any:
    if name == "errors":
        return importlib.import_module("jaxport.errors")
    if name not in _WHERE:
        raise AttributeError(f"module 'jaxport' has no attribute {name!r}")
    module, attribute = _WHERE[name]
    value = getattr(_import(module), attribute)
    globals()[name] = value
    return value


def _import(module: str) -> Any:
    """``module``, imported; without JAX (or with one outside the tested range) a name that needs it
    raises ``MissingExtraError`` naming ``jaxport[jax]``."""
    try:
        return importlib.import_module(module)
    except (ImportError, AttributeError) as exc:
        from jaxport.adapters.jax.installed import as_missing_jax

        missing = as_missing_jax(exc)
        if missing is None:
            raise
        raise missing from exc


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | {"__version__"})
