"""The upgrade service: an artifact read in any layout and written again, sealed, in the newest one.

JAX reads an artifact for six months after it was written
(:mod:`jaxport.domain.artifact.window`) and then refuses what the old layouts
need; ``upgrade`` carries the same program across: the codec reads every
layout that jaxport or ``jax.export`` ever wrote, each module is parsed and
verified in the verifying process (as ``jaxport check`` does), the record is
renewed (:mod:`jaxport.domain.artifact.renewal`: HLO sharding protos mapped
onto named shardings, the format version and the JAX version of this process
recorded), written for a consumer when one is named (the machinery of
``serialize(consumer=...)``), encoded, sealed, decoded again, and only then
written, atomically. Any refusal happens before the file is touched.
The modules themselves are carried as they are, for the StableHLO version they
target, which StableHLO reads for five years; with a consumer, each module newer
than its StableHLO is written for it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.adapters.jax.versions import this_producer, written_format
from jaxport.adapters.mlir.rewrite import ChildModuleForms
from jaxport.adapters.mlir.serialization_form import MIXED_SERIALIZATION
from jaxport.adapters.storage.atomic_files import write_atomically
from jaxport.domain.artifact.consumers import find_consumer, writer_of, written_for
from jaxport.domain.artifact.integrity import Extension, seal
from jaxport.domain.artifact.op_sharding import module_mesh
from jaxport.domain.artifact.renewal import renewed

#: The first format generation that records shardings as named shardings (jax 0.9.0).
_NAMED_GENERATION = 6


@dataclass(frozen=True, slots=True)
class UpgradeReport:
    """What ``upgrade`` wrote.

    Attributes:
        path: the file written.
        function: the exported function's name.
        from_version: the ``serialization_version`` the artifact recorded.
        from_jax: the JAX that wrote it, where it records one.
        to_version: the ``serialization_version`` written.
        to_jax: the JAX version recorded (None: the layout that records none, for an older consumer).
        consumer: the consumer written for (``"JAX 0.9.2"``), None for the newest layout.
        notes: what was mapped or kept (HLO shardings, a module's GSPMD annotations).
        digest: the hex SHA-256 of the sealed artifact's trailer.
    """

    path: str
    function: str
    from_version: int
    from_jax: str | None
    to_version: int
    to_jax: str | None
    consumer: str | None
    notes: tuple[str, ...]
    digest: str

    def __str__(self) -> str:
        old = f"format {self.from_version}" + (f", JAX {self.from_jax}" if self.from_jax else "")
        new = f"format {self.to_version}" + (f", JAX {self.to_jax}" if self.to_jax else "")
        who = f" for {self.consumer}" if self.consumer else ""
        return (f"{self.path}: '{self.function}' upgraded from {old} to {new}{who}, sealed (sha256 "
                f"{self.digest[:16]})" + "".join(f"\n  note: {n}" for n in self.notes))


@dataclass(frozen=True, slots=True)
class UpgradeService:
    """Renews artifacts, its modules checked and written by the verifying process's ``forms``."""

    forms: ChildModuleForms

    def upgrade(self, old: str | os.PathLike[str], new: str | os.PathLike[str], *,
                consumer: str | None = None) -> UpgradeReport:
        """Reads the artifact at ``old`` and writes it renewed to ``new`` (see :func:`jaxport.upgrade`)."""
        who = find_consumer(consumer) if consumer is not None else None  # the user's mistake, before reading
        with open(old, "rb") as file:
            blob = file.read()
        record = decode_artifact(blob)
        producer = this_producer()
        version, jax_version = written_format()
        keep_protos = who is not None and who.serialization is not None and who.serialization < _NAMED_GENERATION
        # Every module parsed and verified in the verifying process, which reads its Shardy meshes.
        checked = [self.forms.worker.check(table.mlir_module_serialized, sdy=MIXED_SERIALIZATION,
                                           form={"meshes": True}) for table in record.chain]
        renewal = renewed(record, version=version, jax_version=jax_version, map_hlo_shardings=not keep_protos,
                          meshes=[module_mesh(c.meshes) for c in checked])
        out = renewal.record
        if who is not None:
            out = written_for(out, who, self.forms.written_for, self.forms.kernels, writer_jax=producer.jax)
        sealed = bytes(seal(encode_artifact(out), Extension(tuple(t.constraints for t in out.chain), producer)))
        again = decode_artifact(sealed)
        assert again.signature == out.signature and len(again.chain) == len(out.chain)
        write_atomically(new, sealed)
        written = again.chain[0]
        return UpgradeReport(os.fspath(new), record.function_name, record.serialization_version, writer_of(record),
                             written.serialization_version, written.jax_version, None if who is None else str(who),
                             renewal.notes, sealed[-40:-8].hex())
