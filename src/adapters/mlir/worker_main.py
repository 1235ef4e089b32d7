"""The verifying process: parses, verifies and re-serializes untrusted modules.

Run as ``python -m jaxport.adapters.mlir.worker_main AS_BYTES CPU_SECONDS``
by :class:`~jaxport.adapters.mlir.worker.ChildModuleWorker`, an isolated child
(:mod:`jaxport.adapters.isolated`: its address space capped, no core dumps,
the messages JSON lines with their bytes). Each request's limits: CPU time
(the given seconds plus one per MiB of module) and a soft address-space limit
of what is in use plus 1 GiB plus 16 times the module's size. It serves
requests until its input closes:

* request: a JSON header ``{"sdy": bool}``, with at most one of ``"standard"``,
  ``"version"`` or ``"specialize"`` (a form of the module to make after verifying
  it: :mod:`~jaxport.adapters.mlir.rewrite`) or ``"kernels": {"mosaic": int | null, "text": bool}``
  (its kernels, each Mosaic one written for that version: :mod:`~jaxport.adapters.mlir.kernels`),
  and ``"meshes": true`` for its Shardy meshes besides (:mod:`~jaxport.adapters.mlir.meshes`),
  with the module's bytes;
* response: a JSON header (:class:`~jaxport.domain.artifact.verification.ModuleFacts`,
  ``{"error": message}``, or ``{"refused": message}`` when JAX's refinement refused
  the shapes, a strict ``version`` cannot express the module or a kernel cannot be
  read or written; with ``"kernels"``, the facts hold the list of kernels), with the module
  re-serialized, or the form asked for (none on error).

A module that crashes the MLIR reader kills only this process; its parent
sees the pipe close and refuses the artifact. The process imports jaxlib's
MLIR bindings (:mod:`~jaxport.adapters.mlir.bindings`), and ``jax`` only for
a request whose form needs it (the standard form, a specialisation).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from jaxport.adapters.isolated.child import Request, serve

#: Address space a request may add: a base plus a multiple of the module's size.
_REQUEST_BASE_BYTES = 1 << 30
_REQUEST_BYTES_PER_MODULE_BYTE = 16


def _uses_shardy(op: Any) -> bool:
    """Whether ``op`` is of the Shardy dialect or carries one of its attributes (a custom call's
    ``sdy.sharding_rule``, an argument's ``sdy.sharding``)."""
    if op.name.startswith("sdy."):
        return True
    attributes = op.attributes
    for name in attributes:
        key = name if isinstance(name, str) else name.name
        if key.startswith("sdy.") or (key in ("arg_attrs", "res_attrs") and "sdy." in str(attributes[key])):
            return True
    return False


def check_module(module_bytes: bytes, sdy: bool) -> tuple[bytes, bytes]:
    """Parses, verifies and re-serializes one module, as JAX would, without importing JAX.

    Args:
        module_bytes: a StableHLO portable artifact.
        sdy: whether to re-serialize with Shardy ops kept (mixed serialization).

    Returns:
        The JSON of its :class:`~jaxport.domain.artifact.verification.ModuleFacts`, and
        the module re-serialized for the StableHLO version it was written for.

    Raises:
        ValueError: the module does not verify or has not exactly one ``main``;
            bytes that the MLIR reader cannot parse raise what it raises.
    """
    # jaxlib is imported here, not at the module's head: under the address-space cap that serve() sets
    # (tests/e2e/test_verification.py: a child too small to load jaxlib dies, it does not answer).
    from jaxlib.mlir import ir

    from jaxport.domain.artifact.module_format import stablehlo_version
    from jaxport.domain.artifact.verification import MlirType, ModuleFacts
    from . import bindings as jaxlib_mlir
    from .unfold import newer_operations

    context = jaxlib_mlir.make_context()
    with context:
        module = jaxlib_mlir.deserialize_portable_artifact(module_bytes, context)
        if not module.operation.verify():
            raise ValueError("the module does not pass MLIR's verifier")
        mains = [op for op in module.body.operations if op.operation.name == "func.func"
                 and "sym_name" in op.attributes
                 and ir.StringAttr(op.attributes["sym_name"]).value == "main"]
        if len(mains) != 1:
            raise ValueError(f"the module has {len(mains)} functions named main")
        ftype = ir.FunctionType(ir.TypeAttr(mains[0].attributes["function_type"]).value)

        def describe(t: Any) -> MlirType:
            text = str(t)
            if text.startswith("tensor<"):
                rt = ir.RankedTensorType(t)
                dynamic = ir.ShapedType.get_dynamic_size()
                return MlirType(str(rt.element_type),
                                tuple(None if d == dynamic else d for d in rt.shape))
            return MlirType(text, None)

        ops = jaxlib_mlir.operations(module)
        targets = tuple(ir.StringAttr(op.attributes["call_target_name"]).value
                        for op in ops if op.name == "stablehlo.custom_call")
        facts = ModuleFacts(tuple(describe(t) for t in ftype.inputs), tuple(describe(t) for t in ftype.results),
                            targets, any(_uses_shardy(op) for op in ops), tuple(newer_operations(ops)))
        version = stablehlo_version(module_bytes[:300]) or "1.0.0"
        again = jaxlib_mlir.serialize_portable_artifact(module, version, sdy)
    return facts.to_json(), again


def main(argv: list[str]) -> int:
    """Serves requests until stdin closes."""
    return serve(_handle, argv)


def _handle(request: Request) -> None:
    """Answers one request (see the module's text)."""
    from . import bindings as jaxlib_mlir  # noqa: F401  (under the address-space cap, before the request's clock)
    from .kernels import KernelRefused, kernels_form
    from .meshes import module_meshes
    from .rewrite import RefinementRefused, VersionRefused, rewrite

    module_bytes, header = request.payload, request.header
    if "standard" in header or "specialize" in header:
        import jax  # noqa: F401  (these forms need JAX: import it before the request's limits)
    request.limit(memory=_REQUEST_BASE_BYTES + _REQUEST_BYTES_PER_MODULE_BYTE * len(module_bytes))
    kernels = None
    try:
        facts, again = check_module(module_bytes, bool(header.get("sdy", False)))
        again = rewrite(module_bytes, header) or again
        meshes = module_meshes(module_bytes) if header.get("meshes") else None
        if "kernels" in header:
            kernels, written = kernels_form(module_bytes, header["kernels"].get("mosaic"),
                                            bool(header["kernels"].get("text", False)))
            again = written or module_bytes  # the bytes as given when no kernel was rewritten
    except (RefinementRefused, VersionRefused, KernelRefused) as exc:
        request.say({"refused": str(exc)[:4000]})
        return
    except Exception as exc:  # noqa: BLE001 -- every parse failure is the artifact's
        request.say({"error": f"{type(exc).__name__}: {exc}"[:4000]})
        return
    request.say({**json.loads(facts), **({} if kernels is None else {"kernels": kernels}),
                 **({} if meshes is None else {"meshes": meshes})}, again)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
