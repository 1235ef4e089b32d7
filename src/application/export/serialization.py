"""Reading an :class:`Exported` from bytes in jax.export's artifact format.

Deserialization checks, then decodes: the jaxport trailer's digest, when
there is one, before any parser sees the bytes, then the flatbuffer, every
field bounds-checked (the VJP tables when first read), into the export's record
(:func:`~jaxport.adapters.flatbuffers.codec.decode_artifact`). The
:class:`Exported` of that record makes its JAX objects here, so that what this
process cannot call (a calling convention outside its window, a pytree node
type or effect not registered here) is refused by ``deserialize`` itself; the
VJPs' are made when :meth:`Exported.vjp` is first called. (Writing is
:meth:`Exported.serialize`: the record encoded, then sealed.)
"""

from __future__ import annotations

from collections.abc import Iterable

from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.jax.trees.registry import PytreeSerializationRegistry
from jaxport.application import wiring
from jaxport.application.export.verifier import read_exported


def deserialize(blob: bytes | bytearray | memoryview,
                registry: PytreeSerializationRegistry | None = None, *,
                verify: bool = False, allowed_custom_calls: Iterable[str] = ()) -> Exported:
    """An :class:`Exported` from bytes written by jaxport or ``jax.export``.

    The jaxport trailer's digest, when present, is checked before anything
    else, and its symbolic constraints are restored.

    Args:
        blob: the artifact's bytes.
        registry: the pytree serialization registry (default: the global one).
        verify: also parse and check every module in a separate process
            first (see :func:`jaxport.application.verify_artifact.verify_artifact`);
            use it for bytes from a source you do not control.
        allowed_custom_calls: with ``verify``, the custom-call targets to accept
            besides those JAX guarantees stable; the artifact's own disabled
            safety checks are not trusted for that.

    Raises:
        ArtifactError: the bytes are not a valid artifact, fail verification,
            or use a version, pytree node type or effect that this process
            does not support.
    """
    verifier = wiring.artifact_verifier() if verify else None
    return read_exported(blob, registry, verifier, allowed_custom_calls)
