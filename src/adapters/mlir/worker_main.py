"""The verifying process: parses, verifies and re-serializes untrusted modules.

Run as ``python -m jaxport.adapters.mlir.worker_main AS_BYTES CPU_SECONDS``
by :class:`~jaxport.adapters.mlir.worker.ModuleWorker`. It first limits its
address space (``RLIMIT_AS``: a hard cap, and before each request a soft
limit of what is in use plus 1 GiB plus 16 times the module's size), core
dumps, and CPU time per request (``RLIMIT_CPU``, set before each request: the
given seconds plus one per MiB of module), then serves requests on stdin
until it closes. Each message is frames of a 4-byte little-endian length and
that many bytes; no pickle, no code from the other side:

* request: a JSON header ``{"sdy": bool}``, with at most one of ``"standard"``,
  ``"version"`` or ``"specialize"`` (a form of the module to make after verifying
  it: :mod:`~jaxport.adapters.mlir.rewrite`), then the module bytes;
* response: a JSON header (:class:`~jaxport.domain.artifact.verification.ModuleFacts`,
  ``{"error": message}``, or ``{"refused": message}`` when JAX's refinement refused
  the shapes or a strict ``version`` cannot express the module), then the module re-serialized, or the form asked for (empty on error).

A module that crashes the MLIR reader kills only this process; its parent
sees the pipe close and refuses the artifact. The process imports jaxlib's
MLIR bindings (:mod:`~jaxport.adapters.mlir.bindings`), and ``jax`` only for
a request whose form needs it (the standard form, a specialisation).
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
from typing import IO, Any, BinaryIO

_LEN = struct.Struct("<I")


def read_frame(stream: BinaryIO, limit: int) -> bytes | None:
    """One frame, or None at end of stream.

    Raises:
        ValueError: the frame claims more than ``limit`` bytes or is cut short.
    """
    head = stream.read(_LEN.size)
    if not head:
        return None
    if len(head) != _LEN.size:
        raise ValueError("a frame's length is cut short")
    (size,) = _LEN.unpack(head)
    if size > limit:
        raise ValueError(f"a frame claims {size} bytes, more than the limit of {limit}")
    data = stream.read(size)
    if len(data) != size:
        raise ValueError("a frame is cut short")
    return data


def write_frames(stream: IO[bytes], *frames: bytes) -> None:
    """Writes ``frames`` and flushes."""
    for frame in frames:
        stream.write(_LEN.pack(len(frame)))
        stream.write(frame)
    stream.flush()


#: Address space a request may add: a base plus a multiple of the module's size.
_REQUEST_BASE_BYTES = 1 << 30
_REQUEST_BYTES_PER_MODULE_BYTE = 16


def _limit_self(address_space: int) -> None:
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if address_space > 0:
            resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    except (ValueError, OSError):  # a platform without these limits: the timeout remains
        pass


def _limit_memory(module_size: int) -> None:
    """Lowers the soft address-space limit to what parsing this module may need."""
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    try:
        with open("/proc/self/statm", "rb") as statm:
            in_use = int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return
    soft = in_use + _REQUEST_BASE_BYTES + _REQUEST_BYTES_PER_MODULE_BYTE * module_size
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except (ValueError, OSError):
        pass


def _limit_cpu(seconds: int) -> None:
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (spent + seconds, resource.RLIM_INFINITY))


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
    from jaxlib.mlir import ir

    from jaxport.domain.artifact.module_format import stablehlo_version
    from jaxport.domain.artifact.verification import MlirType, ModuleFacts
    from . import bindings as jaxlib_mlir

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

        targets: list[str] = []
        shardy: list[bool] = []

        def visit(op: Any) -> Any:
            if op.name == "stablehlo.custom_call":
                targets.append(ir.StringAttr(op.attributes["call_target_name"]).value)
            if not shardy and _uses_shardy(op):
                shardy.append(True)
            return ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        facts = ModuleFacts(tuple(describe(t) for t in ftype.inputs),
                            tuple(describe(t) for t in ftype.results), tuple(targets), bool(shardy))
        version = stablehlo_version(module_bytes[:300]) or "1.0.0"
        again = jaxlib_mlir.serialize_portable_artifact(module, version, sdy)
    return facts.to_json(), again


def main(argv: list[str]) -> int:
    """Serves requests until stdin closes."""
    address_space, cpu_seconds = int(argv[1]), int(argv[2])
    _limit_self(address_space)
    # The protocol gets its own copy of stdout; whatever else writes to file
    # descriptor 1 (a library's print, a C++ diagnostic) goes to stderr instead.
    stdin, stdout = sys.stdin.buffer, os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from . import bindings as jaxlib_mlir  # noqa: F401  (import before the first request's clock)
    from .rewrite import RefinementRefused, VersionRefused, rewrite

    while True:
        header = read_frame(stdin, 1 << 16)
        if header is None:
            return 0
        module_bytes = read_frame(stdin, 1 << 34)
        if module_bytes is None:
            return 1
        request = json.loads(header)
        if "standard" in request or "specialize" in request:
            import jax  # noqa: F401  (these forms need JAX: import it before the request's limits)
        _limit_cpu(cpu_seconds + (len(module_bytes) >> 20))
        _limit_memory(len(module_bytes))
        try:
            facts, again = check_module(module_bytes, bool(request.get("sdy", False)))
            again = rewrite(module_bytes, request) or again
        except (RefinementRefused, VersionRefused) as exc:
            write_frames(stdout, json.dumps({"refused": str(exc)[:4000]}).encode(), b"")
            continue
        except Exception as exc:  # noqa: BLE001 -- every parse failure is the artifact's
            write_frames(stdout, json.dumps({"error": f"{type(exc).__name__}: {exc}"[:4000]}).encode(), b"")
            continue
        write_frames(stdout, facts, again)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
