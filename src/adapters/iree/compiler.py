"""IREE's compiler: StableHLO portable artifacts to ``.vmfb`` modules that read the weights as parameters.

The only module that imports ``iree.compiler`` (the ``iree-base-compiler``
package of the ``jaxport[iree]`` extra). A module is compiled in two steps
of IREE's own pipeline: the StableHLO artifact is imported (``--compile-to=input``:
IREE's input conversion, which erases ``shape_assertion`` custom calls), the
imported ``main`` becomes a private function, and a new ``main`` takes the
caller's arguments only: each weight is a global that IREE initializes from
a named parameter (``#flow.parameter.named<"model"::"dense/w">``), which the
runtime reads from the weights file, memory-mapped; then the rest of the
pipeline runs (``--compile-from=input``). The compiler itself runs as a
separate process (``iree-compile``); rewriting ``main`` uses its MLIR bindings here.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Sequence
from typing import Any

from jaxport.domain.targets.iree import PARAMETER_SCOPE
from jaxport.domain.targets.iree import HOST, IreeTarget
from jaxport.domain.errors import ConversionError, MissingExtraError

try:
    import iree.compiler as iree_compile
    from iree.compiler import ir, version
    from iree.compiler.dialects import util
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("IREE's compiler (iree-base-compiler)", "iree", exc) from exc

_BACKEND = "llvm-cpu"
_FLAGS = (
    # JAX computes in float64 where the program says so; IREE demotes it to float32 unless told not to.
    "--iree-input-demote-f64-to-f32=false",
    # IREE 3.13 hoists computations on parameters into initializers; a hoisted computation on a small
    # parameter (random bits from an 8-byte PRNG key weight) fails at run time with OUT_OF_RANGE
    # ("indirect buffer reference slot 0 is out range"). Without hoisting the weights are read as
    # they are, as when they are passed as arguments.
    "--iree-opt-const-expr-hoisting=false",
)
_PRIVATE_MAIN = "jaxport_main"
_TARGET_ATTR = re.compile(r'#hal\.executable\.target<"llvm-cpu", "([^"]+)", \{([^}]*)\}')
_PROBE = ("module { func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
          "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n  return %0 : tensor<4xf32>\n} }")


@functools.cache
def compiler_version() -> str:
    """The IREE compiler's version (``"3.13.0"``)."""
    return str(version.VERSION)


def resolve_target(target_cpu: str, target_triple: str | None) -> IreeTarget:
    """The target that IREE resolves a CPU and a triple to (compiling a small probe module).

    Raises:
        ConversionError: IREE does not know the CPU or the triple.
    """
    flags = [f"--iree-llvmcpu-target-cpu={target_cpu}"]
    if target_triple is not None:
        flags.append(f"--iree-llvmcpu-target-triple={target_triple}")
    try:
        text = _compile(_PROBE, [*flags, "--compile-to=preprocessing"]).decode()
    except iree_compile.CompilerToolError as exc:
        raise ConversionError(
            "IREE", None, f"IREE cannot compile for CPU {target_cpu!r} and triple "
            f"{target_triple or HOST!r}: {_diagnostic(exc)}") from None
    found = _TARGET_ATTR.search(text)
    if found is None:
        raise RuntimeError(f"IREE's compiled probe names no llvm-cpu target:\n{text[:2000]}")
    fields = dict(re.findall(r'(\w+) = "([^"]*)"', found[2]))
    features = fields.get("cpu_features", "")
    return IreeTarget(target_cpu, target_triple or HOST, fields.get("cpu", target_cpu),
                      tuple(features.split(",")) if features else (), fields.get("target_triple", ""),
                      found[1], _BACKEND)


def compile_module(function: str, portable: bytes, parameters: Sequence[str | None],
                   module_name: str, target: IreeTarget) -> bytes:
    """The ``.vmfb`` of a static portable artifact whose ``main`` takes every flat input.

    Args:
        function: the function's name, for messages.
        portable: the artifact.
        parameters: per input of ``main``, the key of the weight it is (read as a
            parameter of scope ``model``), or None for an argument of the caller's.
        module_name: the VM module's name.
        target: what to compile for.

    Raises:
        ConversionError: IREE refused the module (the message keeps its first diagnostics).
    """
    flags = [f"--iree-llvmcpu-target-cpu={target.cpu}"]
    if target.cpu_features:
        flags.append(f"--iree-llvmcpu-target-cpu-features={','.join(target.cpu_features)}")
    if target.requested_triple != HOST:
        flags.append(f"--iree-llvmcpu-target-triple={target.requested_triple}")
    try:
        imported = _compile(portable, [*flags, "--compile-to=input"], input_type="stablehlo")
        wrapped = _with_parameters(imported, parameters, module_name)
        return _compile(wrapped, [*flags, "--compile-from=input"])
    except iree_compile.CompilerToolError as exc:
        raise ConversionError("IREE", function, f"IREE's compiler refused it: {_diagnostic(exc)}") from None


def _compile(source: str | bytes, flags: Sequence[str], input_type: str = "auto") -> bytes:
    out: bytes = iree_compile.compile_str(source, input_type=input_type, target_backends=[_BACKEND],
                                          extra_args=[*_FLAGS, *flags])
    return out


def _with_parameters(imported: bytes, parameters: Sequence[str | None], module_name: str) -> bytes:
    """The imported module with ``main`` private and a new ``main`` that reads the weights as globals."""
    context = ir.Context()
    module = ir.Module.parse(imported, context=context)
    with context, ir.Location.unknown():
        module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name)
        inner = next(op for op in module.body.operations
                     if op.name == "util.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main")
        inner.attributes["sym_name"] = ir.StringAttr.get(_PRIVATE_MAIN)
        inner.attributes["sym_visibility"] = ir.StringAttr.get("private")
        ftype = ir.FunctionType(ir.TypeAttr(inner.attributes["function_type"]).value)
        arg_attrs = list(ir.ArrayAttr(inner.attributes["arg_attrs"])) if "arg_attrs" in inner.attributes \
            else [ir.DictAttr.get({})] * len(ftype.inputs)
        caller = [i for i, p in enumerate(parameters) if p is None]
        at_end = ir.InsertionPoint(module.body)
        main_type = ir.FunctionType.get([ftype.inputs[i] for i in caller], ftype.results)
        main = util.FuncOp("main", ir.TypeAttr.get(main_type), sym_visibility="public",
                           arg_attrs=ir.ArrayAttr.get([arg_attrs[i] for i in caller]),
                           res_attrs=inner.attributes["res_attrs"] if "res_attrs" in inner.attributes else None,
                           ip=at_end)
        globals_ = {i: _parameter_global(f"weight{i}", key, ftype.inputs[i], at_end)
                    for i, key in enumerate(parameters) if key is not None}
        block = main.regions[0].blocks.append(*main_type.inputs)
        with ir.InsertionPoint(block):
            given = iter(block.arguments)
            operands = [util.GlobalLoadOp(ftype.inputs[i], globals_[i], is_immutable=True).result
                        if i in globals_ else next(given) for i in range(len(parameters))]
            call = util.CallOp(list(ftype.results), _PRIVATE_MAIN, operands)
            util.ReturnOp(list(call.results))
        module.operation.verify()
        # As bytecode: IREE prints a parameter's key without escaping its quotes, so text would not parse.
        out = io.BytesIO()
        module.operation.write_bytecode(out)
        return out.getvalue()


def _parameter_global(name: str, key: str, type_: Any, ip: Any) -> str:
    # IREE reads the key as written (the domain refuses keys with quotes or backslashes).
    value = ir.Attribute.parse(f'#flow.parameter.named<"{PARAMETER_SCOPE}"::"{key}"> : {type_}')
    util.GlobalOp(name, type_, sym_visibility="private", initial_value=value, ip=ip)
    return name


def _diagnostic(exc: Exception) -> str:
    """The first lines of what IREE's compiler printed, without its crash report."""
    text = str(exc)
    start = text.find("Diagnostics:\n")
    body = text[start + len("Diagnostics:\n"):] if start >= 0 else text
    lines = [line for line in body.split("\n\nInvoked with:")[0].splitlines()
             if line.strip() and not line.startswith(("Please report", "Stack dump", " #", "0."))]
    return " ".join(lines[:4]) if lines else text[:500]
