"""Verifying a converted directory from elsewhere before this process opens its model files.

As :mod:`jaxport.application.verify_artifact` does for artifacts: the first time a
directory is opened (its manifest's digest: the manifest records every file's
size and digest, and the loader checked the files against it), an isolated
child (:mod:`.verify_child`, by :mod:`jaxport.adapters.isolated`) under limits of memory, CPU and wall time,
scaled with the files' size, opens every model file with the target's
runtime and calls every variant (on the golden examples that reach it, else on
zeros of the variant's smallest inputs). A child that dies, hangs or
answers wrongly refuses the directory with :class:`ArtifactError`, naming the
directory, the file and what happened. The verdict is remembered in the
verdict store artifacts use (:func:`jaxport.application.wiring.verdict_store`),
unless the child died or ran out of time (that may not happen again), so a
later load costs a digest of the manifest.

The limits: ``JAXPORT_VERIFY_TIMEOUT`` (wall seconds, plus 3 per MiB of
files) and ``JAXPORT_VERIFY_CPU_SECONDS`` (plus 1 per MiB), as for artifacts;
the address space is :data:`BASE_ADDRESS_SPACE` plus 16 times the files' size.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from jaxport.domain.artifact.verification import Verdict, verdict_key
from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.errors import ArtifactError, UsageError
from jaxport.domain.opened_directory import OpenedDirectory
from jaxport.domain.ports import VerdictStore
from jaxport.domain.targets.registry import target

#: Bumped when what the child checks changes, so that remembered verdicts are not reused.
#:
#: * 1 (2026-12-01): every model file opened, every variant called on the golden examples and on zeros.
#: * 2 (2026-12-06): each variant that no golden example reaches is called on zeros (version 1 made
#:   none and so called no variant of a directory without golden examples), its free dimension
#:   variables at their smallest allowed values; a variant without inputs is a failing reason.
CHECKS_VERSION: Final = 2
#: The child's address space before the files' share (a runtime reserves much address space it never uses).
BASE_ADDRESS_SPACE: Final = 32 << 30
DEFAULT_TIMEOUT_SECONDS: Final = 300.0
DEFAULT_CPU_SECONDS: Final = 120
#: What the reason of a golden example answered wrongly says (:mod:`.verify_child` writes it).
WRONG_EXAMPLE: Final = "answers golden example"
#: The module the child runs.
CHILD_MODULE = "jaxport.application.conversion.verify_child"


@dataclass(frozen=True, slots=True)
class DirectoryVerification:
    """What verifying one converted directory found.

    Attributes:
        ok: whether every model file opened and every variant answered.
        reasons: why not, one line each, each naming its file.
        digest: the SHA-256 of the manifest (which records every file's digest).
        cached: whether the verdict was remembered from an earlier verification.
    """

    ok: bool
    reasons: tuple[str, ...]
    digest: str
    cached: bool

    def raise_if_failed(self, root: str, *, but_wrong_examples: bool = False) -> None:
        """Raises ArtifactError naming ``root`` and every reason, unless ``ok`` (or, with
        ``but_wrong_examples``, unless every reason is a golden example answered wrongly: what
        ``check_numerics`` reports rather than refuses)."""
        if not self.ok and not (but_wrong_examples and all(WRONG_EXAMPLE in r for r in self.reasons)):
            raise ArtifactError(f"The converted directory {root} failed verification:\n"
                                + "\n".join(f"  - {r}" for r in self.reasons))


@dataclass(frozen=True, slots=True)
class DirectoryVerifier:
    """Verifies converted directories, each verdict remembered in ``store``.

    Made on the verdict store that artifacts use
    (:func:`jaxport.application.wiring.verdict_store`); a test makes its own on its own store.
    """

    store: VerdictStore

    def verify(self, directory: OpenedDirectory[ConvertedManifest], options: Mapping[str, Any]
               ) -> DirectoryVerification:
        """Verifies ``directory`` (its files already checked against its manifest).

        Raises:
            UsageError: a runtime option that is not a JSON value, or that the runtime refuses.
        """
        try:
            sent = json.dumps(dict(options), sort_keys=True)
        except (TypeError, ValueError):
            raise UsageError("Runtime options must be JSON values (strings, numbers, lists) to verify the "
                             "directory; pass verify=False for a directory you trust") from None
        digest, manifest = hashlib.sha256(directory.manifest_bytes).hexdigest(), directory.manifest
        key = verdict_key(f"c{CHECKS_VERSION}", digest, manifest.target, sent, _runtimes(manifest.target))
        remembered = self.store.get(key)
        if remembered is not None:
            return DirectoryVerification(remembered.ok, remembered.reasons, digest, True)
        size = sum(f.size for f in manifest.files.values())
        verdict, remember = _run_child(directory.root, json.loads(sent), size)
        if remember:
            self.store.put(key, verdict)
        return DirectoryVerification(verdict.ok, verdict.reasons, digest, False)


@functools.cache
def _runtimes(target_name: str) -> tuple[str, ...]:
    """The Python, NumPy and the target's runtime a verdict depends on (read once per process): the
    modules the registry says loading the target imports (:attr:`~jaxport.domain.targets.registry.TargetEntry.loads`).

    Each is known by where its package's first file (or, for a namespace
    package, its folder) is and its identity (inode, size, modification time):
    an upgraded or reinstalled runtime writes new files, so its verdicts are
    not reused. Found without importing the runtimes or ``importlib.metadata``
    (which, with the ``email`` package behind it, costs a fresh process tens of milliseconds).
    """
    import importlib.util

    found = [f"python {sys.version_info[:3]}"]
    for module in ("numpy", *target(target_name).loads):
        try:
            spec = importlib.util.find_spec(module)
            origin = None if spec is None else spec.origin or next(iter(spec.submodule_search_locations or ()), None)
            status = os.stat(origin) if origin else None
        except (ImportError, ValueError, OSError):
            continue
        if status is not None:
            found.append(f"{module} {origin} {status.st_ino} {status.st_size} {status.st_mtime_ns}")
    return tuple(found)


def _run_child(root: str, options: dict[str, Any], size: int) -> tuple[Verdict, bool]:
    """(the verdict, whether to remember it)."""
    # Here, not at the top: a load whose verdict is remembered starts no child (nor imports subprocess:
    # 9 ms under -X importtime on a busy 2-core machine).
    from jaxport.adapters.isolated.parent import Child, ChildDied, env_limit

    mib = size >> 20
    timeout = env_limit("JAXPORT_VERIFY_TIMEOUT", DEFAULT_TIMEOUT_SECONDS) + 3 * mib
    cpu_seconds = int(env_limit("JAXPORT_VERIFY_CPU_SECONDS", DEFAULT_CPU_SECONDS)) + mib
    deadline = time.monotonic() + timeout
    file = "the directory"
    answer: dict[str, Any] = {}
    child = Child(CHILD_MODULE, address_space=BASE_ADDRESS_SPACE + 16 * size, cpu_seconds=cpu_seconds,
                  last_words=True)
    try:
        with child.watch(deadline):
            child.send({"path": os.path.abspath(root), "options": options}, last=True)
            while not answer:
                message, _ = child.receive(0)
                if isinstance(message.get("file"), str):
                    file = message["file"]
                else:
                    answer = message
            child.finish(deadline)
    except ChildDied as died:
        if died.timed_out:
            return Verdict(False, (f"{file}: the verifying process did not answer in {timeout:g} s and "
                                   "was killed",)), False
        return Verdict(False, (f"{file}: the verifying process stopped ({died.how})"
                               + (f"; its last words: {died.last_words}" if died.last_words else ""),)), False
    if answer.get("caller") == "UsageError" and isinstance(answer.get("message"), str):
        raise UsageError(answer["message"])  # the runtime refused the caller's options in the child
    ok, reasons = answer.get("ok"), answer.get("reasons")
    if not isinstance(ok, bool) or not isinstance(reasons, list):
        return Verdict(False, (f"{file}: the verifying process stopped (it gave no answer)",)), False
    return Verdict(ok, tuple(str(r) for r in reasons)), True
