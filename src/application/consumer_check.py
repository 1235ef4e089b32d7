"""Whether a JAX or TensorFlow release can read and run an artifact or a bundle, without JAX."""

from __future__ import annotations

import os

from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.adapters.flatbuffers.decode import records_short_device_count
from jaxport.domain.artifact.consumers import Consumer, Verdict, find_consumer, needs_kernels, verdict
from jaxport.domain.artifact.kernels import Kernel, may_hold_kernels


def check_consumer(path_or_blob: str | os.PathLike[str] | bytes | bytearray, consumer: str) -> Verdict:
    """Whether ``consumer`` (``"jax==0.9.2"``, ``"tf==2.21"``) can read and run an artifact or a bundle.

    The answer comes from jaxport's table of consumers' windows
    (:mod:`jaxport.domain.artifact.consumers`): calling convention, StableHLO target
    and, for JAX, the fields of ``jax.export``'s format the artifact needs and the
    Mosaic version of its Pallas kernels: the same decision that ``serialize(consumer=...)``
    makes. Loads neither JAX nor jaxlib: the kernels of a module that holds some are
    read by the verifying process. For a bundle directory every function is
    checked; a reason names the function's file.

    Args:
        path_or_blob: an artifact file or its bytes, or a bundle directory.
        consumer: ``RUNTIME==VERSION``; RUNTIME is ``jax``, ``tf`` or ``tensorflow``.

    Returns:
        The verdict: ``.ok``, and the ``.reasons`` why not.

    Raises:
        UsageError: ``consumer`` is not in the table (the message lists its versions).
        ArtifactError: the bytes are not a valid artifact, or the bundle is damaged.
        OSError: the file cannot be read.
    """
    who = find_consumer(consumer)
    if isinstance(path_or_blob, (bytes, bytearray)):
        return _artifact_verdict(bytes(path_or_blob), who)
    if os.path.isdir(path_or_blob):
        from jaxport.adapters.storage.bundle_dir import read_function, read_manifest  # as inspection.py

        manifest = read_manifest(path_or_blob)
        reasons, notes = [], []
        for entry in manifest.functions:
            found = _artifact_verdict(read_function(path_or_blob, manifest, entry.file), who)
            reasons += [f"{entry.file}: {r}" for r in found.reasons]
            notes += [n for n in found.notes if n not in notes]
        return Verdict(who, tuple(reasons), tuple(notes))
    with open(path_or_blob, "rb") as file:
        return _artifact_verdict(file.read(), who)


def _artifact_verdict(blob: bytes, who: Consumer) -> Verdict:
    record = decode_artifact(blob)
    kernels: list[Kernel] = []
    if needs_kernels(record):
        from jaxport.adapters.mlir.rewrite import ChildModuleForms  # only for modules with kernels
        from jaxport.application import wiring

        forms = ChildModuleForms(wiring.module_worker())
        for table in record.chain:
            if may_hold_kernels(table.mlir_module_serialized):
                kernels.extend(forms.kernels(table.mlir_module_serialized)[1])
    return verdict(record, who, short_device_count=records_short_device_count(blob), kernels=kernels)
