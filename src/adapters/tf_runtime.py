"""TensorFlow: SavedModels whose functions call jaxport's modules through ``XlaCallModule``.

The only module that imports TensorFlow (``pip install 'jaxport[tf]'``),
and only when a function here runs. It writes a SavedModel from a
:class:`~jaxport.domain.savedmodel_plan.SavedModelPlan` (the weights as one
``tf.Variable`` each, so the graph holds no weight constants; one serving
signature per function, with flat named tensors; one function per signature
on the saved object, taking and returning the function's pytrees, with a
gradient from the exported VJP module, as ``jax2tf`` gives it), and runs a
SavedModel's signatures as a :class:`~jaxport.domain.runtime.Runtime`.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..domain.artifact import ArtifactRecord
from ..domain.errors import ArtifactCallError, ConversionError, JaxportError, MissingExtraError
from ..domain.module_format import stablehlo_version
from ..domain.platforms import callee_platform_indices
from ..domain.runtime import HostArray
from ..domain.runtime_calls import build_tree, flatten_call, flatten_tree, unflatten_results
from ..domain.savedmodel_names import SAVEDMODEL, tf_name
from ..domain.savedmodel_plan import FunctionPlan, ModuleCall, SavedModelPlan, TensorPlan

#: The oldest calling convention XlaCallModule accepts (``kVersionMinimumSupported``).
_OLDEST_VERSION = 4


@functools.cache
def _tf() -> Any:
    # TensorFlow's Lite converter imports JAX, when it is installed, for an optional
    # feature (tensorflow/lite/python/util.py, in a try/except ImportError): a process
    # that converts or serves with TensorFlow would load JAX for nothing (about a second
    # and its memory). While TensorFlow loads, ``import jax`` fails, as TensorFlow allows.
    block = "jax" not in sys.modules
    if block:
        sys.modules["jax"] = None  # type: ignore[assignment]
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise MissingExtraError("TensorFlow", "tf", exc) from exc
    finally:
        if block and sys.modules.get("jax", False) is None:
            del sys.modules["jax"]
    return tf


def _xla() -> Any:
    _tf()
    from tensorflow.compiler.tf2xla.python import xla

    return xla


def calling_convention_versions() -> tuple[int, int]:
    """The calling-convention versions the installed TensorFlow's ``XlaCallModule`` accepts."""
    return _OLDEST_VERSION, int(_xla().call_module_maximum_supported_version())


def check_readable(function: str, call: ModuleCall) -> None:
    """Checks that the installed TensorFlow's StableHLO reads the module of ``call``.

    TensorFlow's Python StableHLO deserializer knows no Shardy dialect
    (``XlaCallModule`` does): a module that uses it is left to the op.

    Raises:
        ConversionError: TensorFlow's StableHLO does not read the module (one
            written for a newer StableHLO, with operations TensorFlow's lacks).
    """
    if call.use_shardy_partitioner:
        return
    _tf()
    from tensorflow.compiler.mlir.stablehlo import stablehlo

    try:
        stablehlo.deserialize_portable_artifact_str(call.module)
    except Exception as exc:  # the extension raises ValueError; anything else is the same refusal
        raise ConversionError(SAVEDMODEL, function, f"the module was written for StableHLO "
                              f"{stablehlo_version(call.module)} and TensorFlow {_tf().__version__}'s "
                              f"StableHLO {stablehlo.get_current_version()} cannot read it: {exc}") from exc


def reads_stablehlo() -> str:
    """The StableHLO version of the installed TensorFlow (the newest target it reads)."""
    _tf()
    from tensorflow.compiler.mlir.stablehlo import stablehlo

    return str(stablehlo.get_current_version())


def _call_module(call: ModuleCall, flat: Sequence[Any]) -> list[Any]:
    tf = _tf()
    results = _xla().call_module(
        [flat[i] for i in call.kept], version=call.version, module=call.module,
        Tout=[tf.as_dtype(d) for d in call.out_dtypes], Sout=[list(s) for s in call.out_shapes],
        platforms=list(call.platforms), disabled_checks=list(call.disabled_checks),
        has_token_input_output=call.has_token_input_output,
        use_shardy_partitioner=call.use_shardy_partitioner)
    return list(results)


def _flat_function(plan: FunctionPlan, weights: Sequence[Any]) -> Callable[..., list[Any]]:
    """The caller's flat tensors -> the flat results; differentiable through the VJP module."""
    tf = _tf()
    vjp = plan.vjp
    if vjp is None:
        def without_gradient(*args: Any) -> list[Any]:
            outs = _call_module(plan.call, [*(w.read_value() for w in weights), *args])
            return [tf.raw_ops.PreventGradient(input=o, message=f"'{plan.name}' was converted without "
                                               "a VJP (save its artifact or bundle with vjp_order=1)")
                    for o in outs]
        return without_gradient

    @tf.custom_gradient  # type: ignore[untyped-decorator]
    def with_gradient(*flat: Any) -> Any:
        outs = _call_module(plan.call, flat)

        def gradient(*cotangents: Any) -> list[Any]:
            cts = [ct if real and ct is not None else
                   (tf.zeros_like(out) if real else tf.zeros(tf.shape(out), tf.bool))
                   for ct, out, real in zip(cotangents, outs, plan.output_differentiable)]
            grads = _call_module(vjp, [*flat, *cts])
            return [g if real else None for g, real in zip(grads, plan.differentiable)]

        return outs, gradient

    def flat_function(*args: Any) -> list[Any]:
        return list(with_gradient(*(w.read_value() for w in weights), *args))

    return flat_function


def _spec(tensor: TensorPlan) -> Any:
    tf = _tf()
    return tf.TensorSpec(list(tensor.shape), tf.as_dtype(tensor.dtype), name=tensor.name)


def _pytree_specs(plan: FunctionPlan) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The caller's (args, kwargs) as TensorSpecs, for tracing the object's function."""
    specs = [_spec(t) for t in plan.inputs]
    args, kwargs = build_tree(plan.caller.in_tree, specs)
    return tuple(args), dict(kwargs)


def write_savedmodel(plan: SavedModelPlan, weights: Sequence[np.ndarray], directory: str) -> None:
    """Writes the SavedModel of ``plan`` into the existing, empty ``directory``.

    Args:
        plan: the functions, their signatures and the weights' records.
        weights: the weights' values (key arrays as their key data), in the plan's order.
        directory: where TensorFlow writes ``saved_model.pb`` and ``variables/``.
    """
    tf = _tf()
    root = tf.Module()
    root.jaxport_weights = [tf.Variable(w, name=tf_name(record.name), trainable=bool(np.issubdtype(w.dtype, np.inexact)))
                            for record, w in zip(plan.weights, weights, strict=True)]
    signatures = {}
    for fn in plan.functions:
        function = _object_function(fn, _flat_function(fn, root.jaxport_weights[:fn.weights]))
        setattr(root, fn.name, function)
        signature = _signature_function(fn, function).get_concrete_function()
        signatures[fn.name] = signature
        if fn.name == plan.default:
            signatures["serving_default"] = signature
    tf.saved_model.save(root, directory, signatures=signatures,
                        options=tf.saved_model.SaveOptions(experimental_custom_gradients=True))


def _signature_function(fn: FunctionPlan, function: Any) -> Any:
    """The serving signature: flat named tensors in and out, calling the object's function."""
    names = [t.name for t in fn.outputs]

    def signature(*leaves: Any) -> dict[str, Any]:
        args, kwargs = build_tree(fn.caller.in_tree, leaves)
        return dict(zip(names, flatten_tree(fn.record.out_tree, function(*args, **kwargs))))

    return _tf().function(signature, input_signature=[_spec(t) for t in fn.inputs], jit_compile=True)


def _object_function(fn: FunctionPlan, flat: Callable[..., list[Any]]) -> Any:
    def function(*args: Any, **kwargs: Any) -> Any:
        return unflatten_results(fn.record, flat(*flatten_call(fn.caller, args, kwargs)))

    function.__name__ = fn.name
    traced = _tf().function(function, jit_compile=True)
    args, kwargs = _pytree_specs(fn)
    traced.get_concrete_function(*args, **kwargs)
    return traced


class TfSavedModel:
    """A SavedModel loaded once, on first use, by TensorFlow."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._loaded: Any = None

    @property
    def loaded(self) -> Any:
        """The object ``tf.saved_model.load`` gives."""
        with self._lock:
            if self._loaded is None:
                self._loaded = _tf().saved_model.load(self.path)
            return self._loaded


class TfSignatureRuntime:
    """Runs one signature of a SavedModel that jaxport wrote (the runtime port).

    Args:
        model: the SavedModel.
        signature: the signature's name.
        inputs, outputs: its tensors' names, in the function's flattening order.
    """

    name = "tf"

    def __init__(self, model: TfSavedModel, signature: str, inputs: Sequence[str], outputs: Sequence[str]) -> None:
        self.model = model
        self.signature = signature
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)

    @functools.cached_property
    def _function(self) -> Any:
        return self.model.loaded.signatures[self.signature]

    def run(self, function: ArtifactRecord, args: Sequence[HostArray],
            dims: Mapping[str, int]) -> list[HostArray]:
        """The flat results of the signature (``function`` is its record, the weights bound).

        Raises:
            PlatformMismatchError: the function was exported for none of this machine's platforms.
            ArtifactCallError: TensorFlow failed to run it (the message keeps TensorFlow's).
        """
        callee_platform_indices(function.function_name, function.platforms, _platforms(),
                                function.disabled_checks)
        try:
            results = self._function(**dict(zip(self.inputs, args)))
            return [results[name].numpy() for name in self.outputs]
        except JaxportError:
            raise
        except Exception as exc:  # TensorFlow's errors: the function's module failed in TensorFlow
            raise ArtifactCallError(function.function_name, exc) from exc


@functools.cache
def _platforms() -> tuple[str, ...]:
    """The platform TensorFlow runs on here, by JAX's name for it."""
    return ("cuda",) if _tf().config.list_physical_devices("GPU") else ("cpu",)
