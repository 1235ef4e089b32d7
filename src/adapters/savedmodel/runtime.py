"""TensorFlow's runtime behind the runtime port: a SavedModel that jaxport wrote, its signatures called.

Imports TensorFlow (``pip install 'jaxport[tf]'``) and never JAX. The
SavedModel is loaded once, at the first call; each function runs its
serving signature with the caller's flat arrays as named tensors
(:mod:`jaxport.domain.converted.wire_names`). The writer is
:mod:`jaxport.adapters.savedmodel.converter`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from jaxport.domain.converted.manifest import ConvertedManifest, Variant
from jaxport.domain.errors import ArtifactCallError, JaxportError
from jaxport.domain.calls.host_arrays import HostArray
from .tensorflow_import import tf as _tf


def load(root: str, manifest: ConvertedManifest, options: Mapping[str, Any]) -> TfRuntime:
    """The runtime of a SavedModel directory whose files were checked (the registry's runtime loader).

    Raises:
        ValueError: an option (TensorFlow's runtime takes none).
        MissingExtraError: TensorFlow is not installed.
    """
    if options:
        raise ValueError(f"TensorFlow's runtime takes no options, not {sorted(options)}")
    _tf()
    return TfRuntime(root, manifest)


def host_facts() -> dict[str, Any]:
    """The platforms TensorFlow runs on here, by JAX's names, for the SavedModel plan's host check."""
    return {"platforms": list(_platforms())}


def reads_stablehlo() -> str:
    """The StableHLO version of the installed TensorFlow (the newest target it reads)."""
    _tf()
    from tensorflow.compiler.mlir.stablehlo import stablehlo

    return str(stablehlo.get_current_version())


class TfRuntime:
    """Runs the signatures of one SavedModel (a :class:`~jaxport.domain.targets.ports.TargetRuntime`) and
    reads its weights back (a :class:`~jaxport.domain.targets.ports.WeightsRuntime`)."""

    def __init__(self, path: str, manifest: ConvertedManifest) -> None:
        self.path = path
        functions = manifest.target_details.get("functions", {})
        self._signatures = {f.name: str(functions[f.name]["signature"]) for f in manifest.functions}
        self._names = {f.name: (f.signature.input_names, f.signature.output_names) for f in manifest.functions}
        self._weights = tuple(w.name for w in manifest.weights.leaves) if manifest.weights is not None else ()
        self._lock = threading.Lock()
        self._loaded: Any = None

    @property
    def loaded(self) -> Any:
        """The object ``tf.saved_model.load`` gives (loaded at the first call)."""
        with self._lock:
            if self._loaded is None:
                self._loaded = _tf().saved_model.load(self.path)
            return self._loaded

    def params(self) -> dict[str, HostArray]:
        """The weights by key path, in the manifest's order, read from the SavedModel's variables (loading it)."""
        if not self._weights:
            return {}
        params = {name: variable.numpy() for name, variable in zip(self._weights, self.loaded.jaxport_weights, strict=True)}
        for array in params.values():
            array.flags.writeable = False  # read-only, as the other targets' views of their weights file
        return params

    def run(self, function: str, variant: Variant, args: Sequence[HostArray]) -> list[HostArray]:
        """The flat results of ``function``'s signature for the caller's flat arrays.

        Raises:
            ArtifactCallError: TensorFlow failed to run it (the message keeps TensorFlow's).
        """
        inputs, outputs = self._names[function]
        try:
            results = self.loaded.signatures[self._signatures[function]](**dict(zip(inputs, args)))
            return [results[name].numpy() for name in outputs]
        except JaxportError:
            raise
        except Exception as exc:  # TensorFlow's errors: the function's module failed in TensorFlow
            raise ArtifactCallError(function, exc) from exc


@functools.cache
def _platforms() -> tuple[str, ...]:
    """The platform TensorFlow runs on here, by JAX's name for it."""
    return ("cuda",) if _tf().config.list_physical_devices("GPU") else ("cpu",)
