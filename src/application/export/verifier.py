"""Verifying artifacts from elsewhere before anything in this process parses a module.

One idea at two levels: this service gathers the facts and runs the checks;
what an artifact must satisfy is :mod:`jaxport.domain.artifact.verification` (the policy
of the same name).

:class:`ArtifactVerifier` is the service (built once in the composition root;
its public function is :func:`jaxport.application.verify_artifact.verify_artifact`,
which ``jaxport.load``, ``jaxport.deserialize(verify=True)``, ``jaxport.load_bundle``
and ``jaxport check`` use). In order:

1. the jaxport trailer's digest, when there is one, and every field of the
   flatbuffer, bounds-checked (:func:`~jaxport.adapters.flatbuffers.codec.decode_artifact`);
2. a remembered verdict for these bytes and this allowlist, if any;
3. each module of the VJP chain, parsed, verified and re-serialized by the
   verifying process (:mod:`~jaxport.adapters.mlir.worker`), under time and
   memory limits; a crash or a hang there refuses the artifact;
4. ``main``'s signature against the record, and every custom call against
   JAX's stable targets plus the caller's ``allowed_custom_calls``
   (:mod:`jaxport.domain.artifact.verification`).

A verdict is remembered per SHA-256 of the bytes (and allowlist) in the
verdict directory (:mod:`~jaxport.adapters.storage.verdict_store`), unless the
verifying process died (that may not happen again) or re-serialization
changed the module.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass

from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.exported.exported import Exported, exported_of
from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry
from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.integrity import is_sealed
from jaxport.domain.artifact.module_format import check_portable_artifact
from jaxport.domain.artifact.verification import VERIFIER_VERSION, ModuleFacts, Verdict, verdict, verdict_key
from jaxport.domain.ports import ModuleWorker, StableHlo, VerdictStore


@dataclass(frozen=True, slots=True)
class VerificationReport:
    """What verifying one artifact found.

    Attributes:
        ok: whether the artifact passed every check.
        reasons: why not, one line each (empty when ``ok``).
        digest: the SHA-256 of the artifact's bytes, hex.
        sealed: whether the artifact carries a jaxport trailer (digest and constraints).
        cached: whether the verdict was remembered from an earlier verification.
        record: the verified record, its modules as re-serialized by the
            verifying process (None unless ``ok``).
    """

    ok: bool
    reasons: tuple[str, ...]
    digest: str
    sealed: bool
    cached: bool
    record: ArtifactRecord | None = None

    def raise_if_failed(self, what: str = "The artifact") -> ArtifactRecord:
        """The verified record.

        Raises:
            ArtifactError: the artifact failed; the message lists every reason.
        """
        if self.ok and self.record is not None:
            return self.record
        raise ArtifactError(f"{what} failed verification:\n" + "\n".join(
            f"  - {r}" for r in self.reasons))


@dataclass(frozen=True, slots=True)
class ArtifactVerifier:
    """Verifies artifacts (:func:`jaxport.verify_artifact`), each verdict remembered in ``store``.

    The composition root builds the process's one (:func:`jaxport.application.wiring.artifact_verifier`);
    a test makes its own on its own ports.

    Attributes:
        store: where verdicts are remembered, per digest, allowlist and parser version.
        stablehlo: the StableHLO port (its parser's version and the newest version it reads).
        worker: the verifying process that parses the modules.
    """

    store: VerdictStore
    stablehlo: StableHlo
    worker: ModuleWorker

    def verify(self, source: bytes | bytearray | memoryview | str | os.PathLike[str], *,
               allowed_custom_calls: Iterable[str] = (),
               worker: ModuleWorker | None = None) -> VerificationReport:
        """:func:`jaxport.verify_artifact`, on this verifier's ports (``worker``: default this verifier's)."""
        if isinstance(source, (bytes, bytearray, memoryview)):
            blob = bytes(source)
        else:
            with open(source, "rb") as file:
                blob = file.read()
        allowed = tuple(sorted(set(allowed_custom_calls)))
        digest = hashlib.sha256(blob).hexdigest()
        sealed = is_sealed(blob)
        try:
            record = decode_artifact(blob)
        except ArtifactError as exc:
            return VerificationReport(False, (str(exc),), digest, sealed, False)
        key = verdict_key(f"v{VERIFIER_VERSION}", digest, allowed, self.stablehlo.parser_version())
        remembered = self.store.get(key)
        if remembered is not None:
            return VerificationReport(remembered.ok, remembered.reasons, digest, sealed, True,
                                      record if remembered.ok else None)
        outcome, checked, remember = _check_chain(record, allowed, worker or self.worker,
                                                  newest=self.stablehlo.newest_readable_version())
        if remember:
            self.store.put(key, outcome)
        return VerificationReport(outcome.ok, outcome.reasons, digest, sealed, False,
                                  checked if outcome.ok else None)


def read_exported(blob: bytes | bytearray | memoryview, registry: PytreeSerializationRegistry | None,
                  verifier: ArtifactVerifier | None, allowed_custom_calls: Iterable[str] = ()) -> Exported:
    """The :class:`Exported` of an artifact's bytes (:func:`jaxport.deserialize`), verified first by
    ``verifier`` (accepting ``allowed_custom_calls``), or only decoded without one.

    Raises:
        ArtifactError: as :func:`jaxport.deserialize`.
    """
    if verifier is None:
        return exported_of(decode_artifact(blob), registry)
    return exported_of(verifier.verify(blob, allowed_custom_calls=allowed_custom_calls).raise_if_failed(), registry)


def _check_chain(record: ArtifactRecord, allowed: tuple[str, ...], worker: ModuleWorker, *,
                 newest: str) -> tuple[Verdict, ArtifactRecord, bool]:
    """(verdict, the record with re-serialized modules, whether to remember the verdict)."""
    sdy = jax_internals.backend_serializes_with_sdy()
    pairs: list[tuple[ArtifactRecord, ModuleFacts]] = []
    modules: list[bytes] = []
    reasons: list[str] = []
    remember = True
    for level, one in enumerate(record.chain):
        prefix = "" if level == 0 else f"VJP of order {level}: "
        try:
            check_portable_artifact(one.mlir_module_serialized, newest_readable=newest)
            checked = worker.check(one.mlir_module_serialized, sdy=sdy)
        except ArtifactError as exc:
            reasons.append(prefix + str(exc))
            remember = remember and "verifying process stopped" not in str(exc)
            continue
        remember = remember and checked.reserialized == one.mlir_module_serialized
        pairs.append((one, checked.facts))
        modules.append(checked.reserialized)
    if reasons:
        return Verdict(False, tuple(reasons)), record, remember
    return verdict(pairs, allowed=allowed), record.with_modules(modules), remember
