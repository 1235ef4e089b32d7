"""The kernels of a module, read and written for an older Mosaic, in the verifying process.

A Pallas TPU kernel is a ``tpu_custom_call`` whose ``backend_config`` is JSON
holding the Mosaic module (``{"custom_call_config": {"body": BASE64, ...}}``).
:func:`kernels_form` walks a module's kernels (:mod:`jaxport.domain.artifact.kernels`),
reads each Mosaic module's ``stable_mosaic.version`` and, when asked for an older
version, re-serializes the kernel for it as JAX's own
``CustomCallBackendConfig.downgrade_lowered_module_asm`` does: jaxlib's
``mosaic-serde`` passes (read, then write with ``target-version``) and MLIR
bytecode at its oldest version; for a consumer older than the writer, as MLIR
text in the generic form, with its locations (an older MLIR does not read this
MLIR's bytecode at any version: :mod:`jaxport.domain.artifact.kernels`). Runs
only in the verifying process (jaxlib, no ``jax``); the rest of the backend
config is kept as written.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.passmanager import PassManager

from jaxport.domain.artifact.kernels import BYTECODE, KERNEL_TARGETS, MOSAIC_TARGET, TEXT, Kernel
from jaxport.domain.artifact.module_format import PORTABLE_ARTIFACT_MAGIC, read_producer, stablehlo_version
from . import bindings as jaxlib_mlir
from .serialization_form import MIXED_SERIALIZATION


class KernelRefused(Exception):
    """A kernel cannot be read or written for the Mosaic version asked; the message names it."""


def kernels_form(module_bytes: bytes, mosaic: int | None,
                 text: bool = False) -> tuple[list[dict[str, Any]], bytes | None]:
    """The kernels of a (verified) module as written, and the module with each Mosaic kernel newer
    than ``mosaic`` written for it and, when ``text``, each Mosaic kernel in bytecode written as
    MLIR text (None when no kernel was rewritten).

    Raises:
        KernelRefused: a Mosaic kernel does not parse, or this jaxlib cannot write it for ``mosaic``.
    """
    context = jaxlib_mlir.make_context()
    module = jaxlib_mlir.deserialize_portable_artifact(module_bytes, context)
    found: list[Kernel] = []
    rewritten = False
    with context:
        for op in jaxlib_mlir.operations(module):
            if op.name != "stablehlo.custom_call":
                continue
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            if target not in KERNEL_TARGETS:
                continue
            name = ir.StringAttr(op.attributes["kernel_name"]).value if "kernel_name" in op.attributes else "?"
            if target != MOSAIC_TARGET:
                found.append(Kernel(target, name, None))
                continue
            config = ir.StringAttr(op.attributes["backend_config"]).value
            body, version = _mosaic_body(config, name)
            downgrade = mosaic is not None and version is not None and version > mosaic
            if downgrade or (text and body.startswith(PORTABLE_ARTIFACT_MAGIC)):
                older = _written_for(body, mosaic if downgrade else None, text, name)
                op.attributes["backend_config"] = ir.StringAttr.get(_with_body(config, body, older))
                rewritten, version, body = True, mosaic if downgrade else version, older
            found.append(Kernel(target, name, version, *_form(body)))
        again = None
        if rewritten:
            version_text = stablehlo_version(module_bytes[:300]) or "1.0.0"
            again = jaxlib_mlir.serialize_portable_artifact(module, version_text, MIXED_SERIALIZATION)
    return [k.to_json() for k in found], again


def _mosaic_body(config: str, name: str) -> tuple[bytes, int | None]:
    """A Mosaic kernel's module bytes and its ``stable_mosaic.version`` (None when it records none)."""
    try:
        body = base64.b64decode(json.loads(config)["custom_call_config"]["body"], validate=True)
    except (ValueError, KeyError, TypeError) as exc:
        raise KernelRefused(f"the Pallas kernel '{name}' has a backend config without a Mosaic body: "
                            f"{type(exc).__name__}: {exc}") from None
    with _mosaic_context():
        module = _parse(body, name)
        attributes = module.operation.attributes
        version = ir.IntegerAttr(attributes["stable_mosaic.version"]).value \
            if "stable_mosaic.version" in attributes else None
    return body, version


def _written_for(body: bytes, version: int | None, text: bool, name: str) -> bytes:
    """The Mosaic module ``body`` written for Mosaic ``version`` (None: its own), as JAX downgrades a
    kernel, in MLIR bytecode at its oldest version or, when ``text``, as generic MLIR text."""
    with _mosaic_context():
        module = _parse(body, name)
        if version is not None:
            try:
                PassManager.parse("builtin.module(mosaic-serde{serialize=false},"
                                  f"mosaic-serde{{serialize=true target-version={version}}})").run(module.operation)
            except Exception as exc:  # noqa: BLE001 -- jaxlib's message says which operation
                raise KernelRefused(f"the Pallas kernel '{name}' cannot be written for Mosaic version {version} "
                                    f"by this jaxlib: {str(exc).strip()[:600]}") from None
        if text:
            # The generic form: no operation's custom syntax, which a dialect may change between releases.
            return str(module.operation.get_asm(enable_debug_info=True, print_generic_op_form=True)).encode()
        buffer = io.BytesIO()
        module.operation.write_bytecode(buffer, desired_version=0)
    return buffer.getvalue()


def _form(body: bytes) -> tuple[str, str | None]:
    """A Mosaic module's form and, for bytecode, the MLIR that wrote it (the producer in the
    bytecode's header, :func:`~jaxport.domain.artifact.module_format.read_producer`)."""
    if not body.startswith(PORTABLE_ARTIFACT_MAGIC):
        return TEXT, None
    header = read_producer(body)
    return BYTECODE, None if header is None or not header[1] else header[1]


def _with_body(config: str, old: bytes, new: bytes) -> str:
    """The backend config with its body replaced, the rest kept as written."""
    old_text, new_text = base64.b64encode(old).decode(), base64.b64encode(new).decode()
    if old_text in config:
        return config.replace(old_text, new_text, 1)
    value = json.loads(config)
    value["custom_call_config"]["body"] = new_text
    return json.dumps(value)


def _mosaic_context() -> ir.Context:
    """A context with Mosaic's TPU dialect and passes, from jaxlib (JAX registers them the same way)."""
    try:
        from jaxlib.mosaic.python import tpu
    except ImportError as exc:
        raise KernelRefused(f"this jaxlib has no Mosaic TPU dialect to read Pallas kernels with: {exc}") from None
    context = ir.Context()
    tpu.register_dialect(context)
    context.allow_unregistered_dialects = True
    return context


def _parse(body: bytes, name: str) -> Any:
    try:
        return ir.Module.parse(body)
    except Exception as exc:  # noqa: BLE001 -- every parse failure is the kernel's
        raise KernelRefused(f"the Pallas kernel '{name}' does not parse: {str(exc).strip()[:600]}") from None
