"""Kernels: custom calls whose backend config carries a serialized module of its own.

A Pallas kernel for TPUs is a ``tpu_custom_call`` whose backend config holds a
Mosaic module (MLIR bytecode, base64, with its ``stable_mosaic.version``);
StableHLO's compatibility promise stops at the custom call, so a consumer
reads the kernel only when it reads that Mosaic version. JAX exports Mosaic at
a forward-compatible version that moves with each release
(``jax/_src/tpu_custom_call.py``: ``get_ir_version`` in forward-compatibility
mode, ``_FWD_COMPAT_VERSION`` from jax-v0.9.2), and that is the version the
table of consumers records for each release: what it writes, it reads.
Mosaic GPU and Triton kernels (GPU) carry modules that jaxport has no table
for: only the JAX that wrote them is known to read them.

MLIR bytecode is read only by an MLIR as new as the one that wrote it, even at
its oldest bytecode version: a JAX 0.10.2 TPU runtime refused a kernel that
jaxlib 0.12 wrote for Mosaic 11 ("unknown attribute code: 23 ... produced by:
MLIR24.0.0git"), and ran the same kernel written as MLIR text (JAX's
``tpu_custom_call`` parses either). So a Mosaic kernel in bytecode is read by
the JAX that wrote it and newer ones; for an older consumer it is written as text.

The verifying process reads the kernels of a module and, for a consumer,
re-serializes each Mosaic module for the consumer's version (as JAX's own
``downgrade_lowered_module_asm`` does), as MLIR text for a consumer older than
the writer; this module holds what that process reports and the rules the
writer and ``jaxport check --consumer`` share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from jaxport.domain.errors import ArtifactError
from .producer import release_key

#: The custom call of a Mosaic (Pallas TPU) kernel.
MOSAIC_TARGET: Final = "tpu_custom_call"
#: The custom calls of GPU kernels whose backend config carries a module (Mosaic GPU, Triton).
GPU_KERNEL_TARGETS: Final = frozenset({"mosaic_gpu", "mosaic_gpu_v2", "__gpu$xla.gpu.triton"})
#: Every custom call that carries a kernel's module.
KERNEL_TARGETS: Final = GPU_KERNEL_TARGETS | {MOSAIC_TARGET}
#: At most this many kernels are reported per module.
MAX_KERNELS: Final = 10_000
#: The forms of a Mosaic module in a backend config: MLIR bytecode or MLIR text.
BYTECODE: Final = "bytecode"
TEXT: Final = "text"


@dataclass(frozen=True, slots=True)
class Kernel:
    """One kernel of a module, as the verifying process found it.

    Attributes:
        target: the custom call (``tpu_custom_call``, ``mosaic_gpu_v2``...).
        name: the kernel's name (the custom call's ``kernel_name``), ``"?"`` when it has none.
        mosaic: the ``stable_mosaic.version`` of a Mosaic module; None for other kernels.
        form: how a Mosaic module is written, :data:`BYTECODE` or :data:`TEXT` (bytecode for others).
        producer: the MLIR that wrote a Mosaic module's bytecode, as the bytecode names it
            (``"MLIR24.0.0git"``); None for text and other kernels.

    >>> str(Kernel("tpu_custom_call", "add", 15))
    "the Pallas kernel 'add' (tpu_custom_call, Mosaic version 15)"
    """

    target: str
    name: str
    mosaic: int | None
    form: str = BYTECODE
    producer: str | None = None

    def __str__(self) -> str:
        if self.target == MOSAIC_TARGET:
            return f"the Pallas kernel '{self.name}' ({self.target}, Mosaic version {self.mosaic})"
        return f"the kernel '{self.name}' ({self.target})"

    def to_json(self) -> dict[str, Any]:
        """The JSON form the verifying process sends."""
        return {"target": self.target, "name": self.name, "mosaic": self.mosaic, "form": self.form,
                "producer": self.producer}


def kernels_from_json(value: Any) -> tuple[Kernel, ...]:
    """The kernels a verifying process reported (``[]`` when it reported none), bounds-checked.

    Raises:
        ArtifactError: the report is malformed.
    """
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_KERNELS:
        raise ArtifactError("the verifier's report of kernels is not a bounded list")
    kernels = []
    for entry in value:
        if (not isinstance(entry, dict) or not isinstance(entry.get("target"), str)
                or not isinstance(entry.get("name"), str)
                or not (entry.get("mosaic") is None or type(entry.get("mosaic")) is int)
                or entry.get("form", BYTECODE) not in (BYTECODE, TEXT)
                or not (entry.get("producer") is None or isinstance(entry.get("producer"), str))):
            raise ArtifactError(f"the verifier reported a malformed kernel: {str(entry)[:200]}")
        producer = entry.get("producer")
        kernels.append(Kernel(entry["target"][:200], entry["name"][:200], entry["mosaic"],
                              entry.get("form", BYTECODE), None if producer is None else producer[:200]))
    return tuple(kernels)


def may_hold_kernels(module: bytes) -> bool:
    """Whether a module's bytes name a kernel's custom call (a portable artifact keeps its strings
    whole): only such modules need the verifying process to read their kernels."""
    return any(target.encode() in module for target in KERNEL_TARGETS)


def older_than_writer(consumer_jax: str | None, writer_jax: str | None) -> bool:
    """Whether a JAX consumer is older than the JAX that writes (or wrote) the kernels, or either
    is not known: then a Mosaic kernel in bytecode may be newer than the consumer's MLIR reads.

    >>> older_than_writer("0.10.2", "0.12.0.1"), older_than_writer("0.12.0.1", "0.12.0.1")
    (True, False)
    """
    if consumer_jax is None or writer_jax is None:
        return True
    return release_key(consumer_jax) < release_key(writer_jax)


def kernel_reasons(kernels: Sequence[Kernel], consumer: str, mosaic: int | None,
                   writer_jax: str | None, consumer_jax: str | None) -> list[str]:
    """Why ``consumer`` would not run these kernels (empty when it would).

    Args:
        kernels: the kernels of one module.
        consumer: the consumer's name, for messages (``"JAX 0.10.2"``).
        mosaic: the Mosaic version the consumer reads (what it exports), None when not known.
        writer_jax: the JAX version that wrote the artifact, when known.
        consumer_jax: the consumer's JAX version (None for TensorFlow).
    """
    reasons = []
    for kernel in kernels:
        if kernel.target == MOSAIC_TARGET:
            if kernel.mosaic is None:
                reasons.append(f"{kernel} records no stable_mosaic.version")
            elif mosaic is None:
                reasons.append(f"{kernel}: the Mosaic versions that {consumer} reads are not known")
            elif kernel.mosaic > mosaic:
                reasons.append(f"{kernel}: {consumer} reads Mosaic up to version {mosaic} (the version it "
                               "exports: jax/_src/tpu_custom_call.py at its tag)")
            if (kernel.form == BYTECODE and consumer_jax is not None
                    and older_than_writer(consumer_jax, writer_jax)):
                reasons.append(f"{kernel} is MLIR bytecode written by {kernel.producer or 'an MLIR not named'} "
                               f"with JAX {writer_jax or 'not recorded'}: an older JAX's MLIR does not read "
                               f"newer bytecode, so {consumer} is not known to read it (serialize(consumer=...) "
                               "writes it as MLIR text)")
        elif consumer_jax is None or writer_jax is None or consumer_jax != writer_jax:
            reasons.append(f"{kernel} carries a module with no compatibility promise across JAX releases: "
                           f"only the JAX that wrote it ({writer_jax or 'not recorded'}) is known to read it")
    return reasons
