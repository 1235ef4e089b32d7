"""What makes two compiled executables interchangeable: the executable cache's key.

An executable compiled for one call of a loaded artifact may serve a later
call, in this process or another, only if nothing that shapes the machine
code differs. The key therefore records:

- the artifact (a digest of its module and signature) and the program that
  was compiled for the call (a digest of the caller's lowered module, which
  embeds the artifact, the call's abstract values, shardings and effects, and
  every lowering option that changed it);
- the call's abstract values and shardings, in words (they are also in the
  program digest; keeping them readable helps whoever inspects an entry);
- where it runs: platform and its version, device kind, the number of
  devices and the ids of the devices the executable is bound to, the number
  of processes, and the host's instruction set (CPU code is compiled for
  the features of the host that compiled it);
- the versions of jax, jaxlib and jaxport, and the compiler options and
  flags that change code generation (``XLA_FLAGS``, JAX's compiler settings).

Two keys are the same executable exactly when they are equal; the cache
stores each under :meth:`ExecutableKey.digest` and keeps the whole
:meth:`ExecutableKey.encode` in the entry, so that a reader rejects an entry
whose key differs even if the file names collide.

>>> key = ExecutableKey("a" * 64, "b" * 64, ("f32[8,16]",), ("None",), "cpu", "cpu", "cpu",
...                     1, (0,), 1, "x86_64", (("jaxlib", "0.10.2"),), ())
>>> ExecutableKey.decode(key.encode()) == key
True
>>> len(key.digest())
64
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from .cache_entry import CacheEntryError

#: The magic of executable entries (see :mod:`jaxport.domain.cache_entry`).
EXECUTABLE_MAGIC = b"JXPEXEC1"


@dataclass(frozen=True, slots=True)
class ExecutableKey:
    """Everything that changes the executable compiled for a call of an artifact.

    Attributes:
        artifact_digest: SHA-256 (hex) of the artifact's module and signature.
        program_digest: SHA-256 (hex) of the lowered program that was compiled.
        in_avals: the call's flat abstract values (``f32[8,16]``).
        in_shardings: the call's flat input shardings, as text.
        platform: the backend platform (``cpu``, ``cuda``, ``tpu``).
        platform_version: the backend's platform version string.
        device_kind: the kind of the devices the executable runs on.
        device_count: how many devices the executable runs on.
        device_ids: the ids of those devices, in the executable's order.
        process_count: how many processes the computation spans.
        host: the host's architecture and CPU features, as a digest.
        versions: ``(package, version)`` pairs (jax, jaxlib, jaxport).
        compiler_flags: ``(name, value)`` pairs of every compiler setting
            that changes code generation.
    """

    artifact_digest: str
    program_digest: str
    in_avals: tuple[str, ...]
    in_shardings: tuple[str, ...]
    platform: str
    platform_version: str
    device_kind: str
    device_count: int
    device_ids: tuple[int, ...]
    process_count: int
    host: str
    versions: tuple[tuple[str, str], ...]
    compiler_flags: tuple[tuple[str, str], ...]

    def encode(self) -> bytes:
        """The key as canonical JSON bytes (equal keys give equal bytes)."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()

    def digest(self) -> str:
        """SHA-256 (hex) of :meth:`encode`: the entry's file name."""
        return hashlib.sha256(self.encode()).hexdigest()

    @classmethod
    def decode(cls, data: bytes) -> ExecutableKey:
        """The key that :meth:`encode` wrote.

        Raises:
            CacheEntryError: the bytes are not an encoded key.
        """
        try:
            raw = json.loads(data)
            values: dict[str, Any] = {f.name: raw[f.name] for f in fields(cls)}
            return cls(**{name: _tuples(value) for name, value in values.items()})
        except (ValueError, KeyError, TypeError) as exc:
            raise CacheEntryError(f"not an executable key: {exc}") from exc


def _tuples(value: Any) -> Any:
    """JSON lists back as tuples, recursively."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
