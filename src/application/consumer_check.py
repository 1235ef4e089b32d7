"""Whether a JAX or TensorFlow release can read and run an artifact or a bundle, without JAX.

:func:`consumer_verdict` is ``jaxport.check_consumer``'s work
(:func:`jaxport.application.verify_artifact.check_consumer`), on the reader of
kernels it is handed: the verifying process's.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.adapters.flatbuffers.decode import records_short_device_count, records_short_device_count_only
from jaxport.domain.artifact.consumers import Consumer, Verdict, find_consumer, needs_kernels, verdict
from jaxport.domain.artifact.kernels import Kernel, may_hold_kernels
from jaxport.domain.artifact.window import window_notes, window_reasons
from jaxport.domain.opened_directory import Directories
from jaxport.domain.path_kind import PathKind

#: What reads a module's Pallas kernels (``ChildModuleForms.kernels``: the module, its kernels).
KernelReader = Callable[[bytes], tuple[bytes, tuple[Kernel, ...]]]


def consumer_verdict(path_or_blob: str | os.PathLike[str] | bytes | bytearray, consumer: str,
                     kernels: KernelReader, directories: Directories) -> Verdict:
    """Whether ``consumer`` can read and run an artifact or a bundle (:func:`jaxport.check_consumer`),
    the kernels of a module that holds some read by ``kernels``, a bundle opened by ``directories``.

    Raises:
        As :func:`jaxport.check_consumer`.
    """
    who = find_consumer(consumer)
    if isinstance(path_or_blob, (bytes, bytearray)):
        return _artifact_verdict(bytes(path_or_blob), who, kernels)
    if os.path.isdir(path_or_blob):
        directory = directories.open(path_or_blob, PathKind.BUNDLE)
        reasons, notes = [], []
        for entry in directory.manifest.functions:
            found = _artifact_verdict(directory.read(entry.file), who, kernels)
            reasons += [f"{entry.file}: {r}" for r in found.reasons]
            notes += [n for n in found.notes if n not in notes]
        return Verdict(who, tuple(reasons), tuple(notes))
    with open(path_or_blob, "rb") as file:
        return _artifact_verdict(file.read(), who, kernels)


def _artifact_verdict(blob: bytes, who: Consumer, kernels: KernelReader) -> Verdict:
    record = decode_artifact(blob)
    found: list[Kernel] = []
    if needs_kernels(record):
        for table in record.chain:
            if may_hold_kernels(table.mlir_module_serialized):
                found.extend(kernels(table.mlir_module_serialized)[1])
    said = verdict(record, who, short_device_count=records_short_device_count(blob), kernels=found)
    # JAX's window: what the consumer refuses as expired, and whether it is built more than six months later.
    expired = window_reasons(record, who, only_short_device_count=records_short_device_count_only(blob))
    return Verdict(who, said.reasons + expired, said.notes + window_notes(record, (who,)))
