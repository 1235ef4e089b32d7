"""TensorFlow's runtime behind the runtime port: a SavedModel that jaxport wrote, its signatures called.

Imports TensorFlow (``pip install 'jaxport[tf]'``) and never JAX. The
SavedModel is loaded once, at load, and each function's serving signature
checked against the manifest (its name, its inputs' and outputs' names);
each call runs the signature with the caller's flat arrays as named tensors
(:mod:`jaxport.domain.calls.wire_names`). TensorFlow's errors become
jaxport's here, in :func:`_tensorflow_errors`. The writer is
:mod:`jaxport.adapters.savedmodel.converter`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from jaxport.domain.converted.manifest import ConvertedManifest, Variant
from jaxport.domain.errors import ArtifactError, UsageError
from jaxport.domain.ports import HostArray
from jaxport.adapters.engine_errors import engine_errors
from .tensorflow_import import tf as _tf


def load(root: str, manifest: ConvertedManifest, options: Mapping[str, Any]) -> TfRuntime:
    """The runtime of a SavedModel directory whose files were checked (the registry's runtime loader).

    Raises:
        UsageError: an option (TensorFlow's runtime takes none).
        MissingExtraError: TensorFlow is not installed.
        ArtifactError: TensorFlow cannot load the SavedModel, or a signature is not the manifest's.
    """
    if options:
        raise UsageError(f"TensorFlow's runtime takes no options, not {sorted(options)}")
    _tf()
    return TfRuntime(root, manifest)


def host_facts() -> dict[str, Any]:
    """The platforms TensorFlow runs on here, by JAX's names, for the SavedModel plan's host check."""
    return {"platforms": list(_platforms())}


def reads_stablehlo() -> str:
    """The StableHLO version of the installed TensorFlow (the newest target it reads)."""
    _tf()
    from tensorflow.compiler.mlir.stablehlo import stablehlo  # after _tf(), which loads TensorFlow without JAX

    return str(stablehlo.get_current_version())


def _tensorflow_errors(function: str | None = None, *, path: str = "") -> AbstractContextManager[None]:
    """TensorFlow's errors (its ``OpError`` family, what its loader raises on bad protos) as jaxport's,
    TensorFlow's words kept (:func:`~jaxport.adapters.engine_errors.engine_errors`).

    Args:
        function: the function being called; None while the SavedModel at ``path`` is loaded.
        path: the SavedModel's directory, for the message.

    Raises:
        ArtifactError: loading failed.
        ArtifactCallError: calling ``function`` failed (its module failed in TensorFlow).
    """
    return engine_errors(function, lambda exc: ArtifactError(
        f"TensorFlow cannot load the SavedModel {path}: {type(exc).__name__}: {exc}"))


class TfRuntime:
    """Runs the signatures of one SavedModel (a :class:`~jaxport.domain.targets.ports.TargetRuntime`) and
    reads its weights back (a :class:`~jaxport.domain.targets.ports.WeightsRuntime`).

    Raises:
        ArtifactError: TensorFlow cannot load the SavedModel, or it lacks a
            function's signature or names other inputs or outputs than the manifest.
    """

    def __init__(self, path: str, manifest: ConvertedManifest) -> None:
        self.path = path
        functions = manifest.target_details.get("functions", {})
        self._signatures = {f.name: functions.get(f.name, {}).get("signature") for f in manifest.functions}
        self._names = {f.name: (f.signature.input_names, f.signature.output_names) for f in manifest.functions}
        self._weights = tuple(w.name for w in manifest.weights.leaves) if manifest.weights is not None else ()
        graphs = sorted({v.file for f in manifest.functions for v in f.variants})  # saved_model.pb
        with _tensorflow_errors(path=f"{path} ({', '.join(graphs)})"):
            #: The object ``tf.saved_model.load`` gives.
            self.loaded: Any = _tf().saved_model.load(path)
        for name, key in self._signatures.items():
            self._check_signature(name, key)

    def _check_signature(self, function: str, key: Any) -> None:
        """Checks that the SavedModel's signature ``key`` takes and gives ``function``'s wire names."""
        with _tensorflow_errors(path=self.path):
            found = self.loaded.signatures.get(key) if isinstance(key, str) else None
        if found is None:
            raise ArtifactError(f"{self.path}: the SavedModel has no signature {key!r} for the function "
                                f"'{function}'; it has {sorted(self.loaded.signatures)}")
        inputs, outputs = self._names[function]
        with _tensorflow_errors(path=self.path):
            # Input names by count: TensorFlow spells the keyword of ``arg1/y`` as ``arg1_y`` here.
            given, returned = len(found.structured_input_signature[1]), sorted(found.structured_outputs)
        if given != len(inputs) or returned != sorted(outputs):
            raise ArtifactError(f"{self.path}: the signature {key!r} takes {given} inputs and returns "
                                f"{returned}, not the manifest's {len(inputs)} and {sorted(outputs)}")

    def params(self) -> dict[str, HostArray]:
        """The weights by key path, in the manifest's order, read from the SavedModel's variables.

        Raises:
            ArtifactError: the SavedModel does not hold them as jaxport wrote them.
        """
        if not self._weights:
            return {}
        with _tensorflow_errors(path=self.path):
            variables = self.loaded.jaxport_weights
            params = {name: variable.numpy() for name, variable in zip(self._weights, variables, strict=True)}
        for array in params.values():
            array.flags.writeable = False  # read-only, as the other targets' views of their weights file
        return params

    def run(self, function: str, variant: Variant, args: Sequence[HostArray]) -> list[HostArray]:
        """The flat results of ``function``'s signature for the caller's flat arrays.

        Raises:
            ArtifactCallError: TensorFlow failed to run it (the message keeps TensorFlow's).
        """
        results = self.tensors(function, args)
        with _tensorflow_errors(function):
            return [result.numpy() for result in results]

    def tensors(self, function: str, args: Sequence[Any]) -> list[Any]:
        """The flat results of ``function``'s signature as TensorFlow's tensors, left where TensorFlow
        put them (``args``: host arrays or tensors; what a loop that keeps its state in TensorFlow calls).

        Raises:
            ArtifactCallError: TensorFlow failed to run it (the message keeps TensorFlow's).
        """
        inputs, outputs = self._names[function]
        with _tensorflow_errors(function):
            results = self.loaded.signatures[self._signatures[function]](**dict(zip(inputs, args)))
            return [results[name] for name in outputs]


@functools.cache
def _platforms() -> tuple[str, ...]:
    """The platform TensorFlow runs on here, by JAX's name for it."""
    return ("cuda",) if _tf().config.list_physical_devices("GPU") else ("cpu",)
