"""The SavedModel converter (the registry's converter of ``"savedmodel"``): TensorFlow writes the SavedModel.

The weights become one ``tf.Variable`` each, so the graph holds no weight
constants; one serving signature per function, with flat tensors named by
:mod:`jaxport.domain.calls.wire_names`; one function per signature on the saved
object, taking and returning the function's pytrees, with a gradient from
the exported VJP module, as ``jax2tf`` gives it. The converting process
imports TensorFlow, never JAX nor jaxlib: the verifying child writes each
module for the StableHLO that TensorFlow reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from jaxport.domain.converted.manifest import Variant
from jaxport.domain.errors import ConversionError
from jaxport.domain.artifact.module_format import stablehlo_version
from jaxport.domain.calls.front import build_tree, flatten_call, flatten_tree, unflatten_results
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.domain.targets.savedmodel import DEFAULT_SIGNATURE, SAVEDMODEL, signature_name, tf_name
from jaxport.domain.targets.savedmodel import (
    FunctionPlan, ModuleCall, SavedModelPlan, TensorPlan, plan_function
)
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.targets.ports import ConversionJob, ConvertedParts, ModuleForms
from jaxport.domain.targets.savedmodel import SavedModelOptions
from jaxport.adapters.storage.safetensors_file import SafetensorsFile
from .tensorflow_import import tf as _tf, xla as _xla
from .runtime import reads_stablehlo

#: The oldest calling convention XlaCallModule accepts (``kVersionMinimumSupported``).
_OLDEST_VERSION = 4
#: The file each function's variant names: the SavedModel's graph.
GRAPH_FILE = "saved_model.pb"


def convert(job: ConversionJob, staging: str) -> ConvertedParts:
    """Writes the SavedModel of ``job`` into ``staging`` (see the module's docstring).

    Raises:
        ConversionError: ``options.default`` names no function; a calling
            convention, a platform or a StableHLO version the installed
            TensorFlow does not take.
        MissingExtraError: TensorFlow is not installed.
    """
    options: SavedModelOptions = job.options
    names = [f.name for f in job.functions]
    default = options.default
    if default is not None and default not in names:
        raise ConversionError(SAVEDMODEL, None, f"default={default!r} names no function; the functions are {names}")
    if default is None and len(names) == 1:
        default = names[0]
    versions = calling_convention_versions()
    signatures = {f.name: signature_name(f.name) for f in job.functions}
    # Each module written for a StableHLO that this TensorFlow reads, where it uses nothing newer
    # (JAX 0.11.2 and later write 1.18.0; TensorFlow 2.21 reads up to 1.13.7), by the verifying child.
    reads = reads_stablehlo()
    records = {f.name: _for_version(f.record, reads, job.forms) for f in job.functions}
    plans = tuple(plan_function(signatures[f.name], records[f.name], f.signature, uses_shardy=f.uses_shardy,
                                versions=versions) for f in job.functions)
    for fn in plans:
        for call in (fn.call, fn.vjp):
            if call is not None:
                check_readable(fn.name, call)
    leaves = job.weights.leaves if job.weights is not None else ()
    weights: list[Any] = []
    if leaves:
        stored = SafetensorsFile(job.weights_path)
        weights = [np.array(stored.array(w.name, w.data_dtype)) for w in leaves]
    write_savedmodel(SavedModelPlan(plans, None if default is None else signatures[default], leaves),
                     weights, staging)
    details = {"tensorflow": str(_tf().__version__), "default_signature": DEFAULT_SIGNATURE,
               "default": default,
               "functions": {f.name: {"signature": signatures[f.name], "platforms": list(f.record.platforms),
                                      "platform_check_disabled":
                                          DisabledSafetyCheck.platform() in f.record.disabled_checks}
                             for f in job.functions}}
    return ConvertedParts(details, {f.name: (Variant(GRAPH_FILE),) for f in job.functions})


def _for_version(record: ArtifactRecord, version: str, forms: ModuleForms) -> ArtifactRecord:
    """``record`` with its modules (its VJP's too) written for the StableHLO ``version``."""
    vjp = None if record.vjp is None else _for_version(record.vjp, version, forms)
    return dataclasses.replace(record, mlir_module_serialized=forms.for_version(record.mlir_module_serialized, version),
                               vjp=vjp)


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
    from tensorflow.compiler.mlir.stablehlo import stablehlo  # after _tf(), which loads TensorFlow without JAX

    try:
        stablehlo.deserialize_portable_artifact_str(call.module)
    except Exception as exc:  # the extension raises ValueError; anything else is the same refusal
        raise ConversionError(SAVEDMODEL, function, f"the module was written for StableHLO "
                              f"{stablehlo_version(call.module)} and TensorFlow {_tf().__version__}'s "
                              f"StableHLO {stablehlo.get_current_version()} cannot read it: {exc}") from exc


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
        function = _object_function(fn, _flat_function(fn, root.jaxport_weights[:fn.caller.nr_weights]))
        setattr(root, fn.name, function)
        signature = _signature_function(fn, function).get_concrete_function()
        signatures[fn.name] = signature
        if fn.name == plan.default:
            signatures[DEFAULT_SIGNATURE] = signature
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
        return unflatten_results(fn.caller, flat(*flatten_call(fn.caller, args, kwargs)))

    function.__name__ = fn.name
    traced = _tf().function(function, jit_compile=True)
    args, kwargs = _pytree_specs(fn)
    traced.get_concrete_function(*args, **kwargs)
    return traced


