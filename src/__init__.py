"""jaxport: export JAX functions to portable StableHLO artifacts and call them back.

``import jaxport`` is cheap: each public name loads its module on first use,
so tools that only inspect artifacts (``jaxport.inspect``) never import JAX.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .domain.artifact_info import ArtifactInfo as ArtifactInfo
    minimum_supported_calling_convention_version: int
    maximum_supported_calling_convention_version: int
    from .domain.safety import DisabledSafetyCheck as DisabledSafetyCheck
    from . import errors as errors
    from .application.bundles import Bundle as Bundle
    from .domain.artifact_info import BundleInfo as BundleInfo
    from .application.bundles import load_bundle as load_bundle
    from .application.bundles import save_bundle as save_bundle
    from .application.numerics import check_numerics as check_numerics
    from .domain.numerics import NumericsReport as NumericsReport
    from .application.consumer_check import check_consumer as check_consumer
    from .application.export_service import export as export
    from .application.export_service import default_export_platform as default_export_platform
    from .application.exported import Exported as Exported
    from .application.exported import call_exported as call_exported
    from .application.artifact_files import load as load
    from .application.artifact_files import save as save
    from .application.inspection import inspect as inspect
    from .application.plain_trees import plain_tree as plain_tree
    from .application.convert import convert as convert
    from .application.convert import to_iree as to_iree
    from .application.convert import to_onnx as to_onnx
    from .application.convert import to_litert as to_litert
    from .application.converted_model import ConvertedModel as ConvertedModel
    from .application.converted_model import load_converted as load_converted
    from .application.converted_model import load_iree as load_iree
    from .domain.target_iree import IreeOptions as IreeOptions
    from .domain.target_onnx import OnnxOptions as OnnxOptions
    from .domain.target_litert import LiteRtOptions as LiteRtOptions
    from .domain.target_savedmodel import SavedModelOptions as SavedModelOptions
    from .application.pytree_registry import PytreeSerializationRegistry as PytreeSerializationRegistry
    from .application.pytree_registration import register_namedtuple_serialization as register_namedtuple_serialization
    from .application.pytree_registration import register_pytree_node_serialization as register_pytree_node_serialization
    from .application.serialization import deserialize as deserialize
    from .application.convert import to_savedmodel as to_savedmodel
    from .application.serving import serve as serve
    from .application.symbolic import poly_spec as poly_spec
    from .application.symbolic import poly_specs as poly_specs
    from .application.symbolic import symbolic_args_specs as symbolic_args_specs
    from .application.symbolic import symbolic_shape as symbolic_shape
    from .application.verification import VerificationReport as VerificationReport
    from .application.verification import verify_artifact as verify_artifact
    from .domain.symbolic import SymbolicScope as SymbolicScope
    from .domain.symbolic import is_symbolic_dim as is_symbolic_dim
    #: This jaxport's version, read on first use from its one place,
    #: ``jaxport.domain.producer.JAXPORT_VERSION`` (pyproject.toml reads it there too).
    __version__: str

_LAZY = {
    # Lazy too, so that `import jaxport` loads none of jaxport's modules.
    "ArtifactInfo": "jaxport.domain.artifact_info",
    "DisabledSafetyCheck": "jaxport.domain.safety",
    "save_bundle": "jaxport.application.bundles",
    "load_bundle": "jaxport.application.bundles",
    "Bundle": "jaxport.application.bundles",
    "BundleInfo": "jaxport.domain.artifact_info",
    "check_consumer": "jaxport.application.consumer_check",
    "check_numerics": "jaxport.application.numerics",
    "NumericsReport": "jaxport.domain.numerics",
    "export": "jaxport.application.export_service",
    "default_export_platform": "jaxport.application.export_service",
    "Exported": "jaxport.application.exported",
    "call_exported": "jaxport.application.exported",
    "deserialize": "jaxport.application.serialization",
    "save": "jaxport.application.artifact_files",
    "load": "jaxport.application.artifact_files",
    "inspect": "jaxport.application.inspection",
    "plain_tree": "jaxport.application.plain_trees",
    "convert": "jaxport.application.convert",
    "to_iree": "jaxport.application.convert",
    "to_onnx": "jaxport.application.convert",
    "to_litert": "jaxport.application.convert",
    "load_converted": "jaxport.application.converted_model",
    "load_iree": "jaxport.application.converted_model",
    "ConvertedModel": "jaxport.application.converted_model",
    "IreeOptions": "jaxport.domain.target_iree",
    "OnnxOptions": "jaxport.domain.target_onnx",
    "LiteRtOptions": "jaxport.domain.target_litert",
    "SavedModelOptions": "jaxport.domain.target_savedmodel",
    "PytreeSerializationRegistry": "jaxport.application.pytree_registry",
    "register_pytree_node_serialization": "jaxport.application.pytree_registration",
    "register_namedtuple_serialization": "jaxport.application.pytree_registration",
    "to_savedmodel": "jaxport.application.convert",
    "serve": "jaxport.application.serving",
    "symbolic_shape": "jaxport.application.symbolic",
    "symbolic_args_specs": "jaxport.application.symbolic",
    "poly_spec": "jaxport.application.symbolic",
    "poly_specs": "jaxport.application.symbolic",
    "verify_artifact": "jaxport.application.verification",
    "VerificationReport": "jaxport.application.verification",
    # Lazy too: `jaxport.inspect` needs no symbolic shapes (half of the import).
    "SymbolicScope": "jaxport.domain.symbolic",
    "is_symbolic_dim": "jaxport.domain.symbolic",
}

#: The calling-convention versions this jaxport reads (and, at the maximum, writes):
#: ``minimum_supported_calling_convention_version`` and
#: ``maximum_supported_calling_convention_version``, read from the domain on first use.
_LAZY_CONSTANTS = {
    "minimum_supported_calling_convention_version": "MINIMUM_VERSION",
    "maximum_supported_calling_convention_version": "MAXIMUM_VERSION",
}

__all__ = sorted(["errors", *_LAZY_CONSTANTS, *_LAZY])


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _LAZY_CONSTANTS:
        value = getattr(importlib.import_module("jaxport.domain.calling_convention"),
                        _LAZY_CONSTANTS[name])
        globals()[name] = value
        return value
    if name == "errors":
        return importlib.import_module("jaxport.errors")
    if name == "__version__":
        value = importlib.import_module("jaxport.domain.producer").JAXPORT_VERSION
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jaxport' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | {"__version__"})
