"""The artifact codec: ``jax.export``'s flatbuffers format, without JAX.

:func:`encode_artifact` writes what jax 0.10.2's ``Exported.serialize()``
writes; :func:`decode_artifact` reads that and the older generations jax
0.10.2 reads, validating every byte first (bad bytes raise
:class:`~jaxport.domain.errors.ArtifactError`). The schema is
``schema.fbs`` next to this module.

Reading needs only the standard library (:mod:`.reader`); so does writing
(:mod:`.encode`), with a builder that lays out the bytes of the ``flatbuffers``
package's builder, which ``jax.export`` writes with (:mod:`.builder`).

>>> from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType, TreeSpec
>>> record = ArtifactRecord(
...     function_name="f", in_tree=TreeSpec.of_tuple(
...         TreeSpec.of_tuple(TreeSpec.leaf()), TreeSpec.of_dict({})),
...     in_avals=(AvalRecord(("b", "4"), DType.FLOAT32),), out_tree=TreeSpec.leaf(),
...     out_avals=(AvalRecord(("b",), DType.FLOAT32),), in_shardings=(None,),
...     out_shardings=(None,), nr_devices=1, platforms=("cpu",), ordered_effects=(),
...     unordered_effects=(), disabled_checks=(), mlir_module_serialized=b"ML\\xefR...",
...     calling_convention_version=10, module_kept_var_idx=(0,), uses_global_constants=True)
>>> decode_artifact(encode_artifact(record)) == record
True
"""

from __future__ import annotations

from jaxport.domain.artifact.record import ArtifactRecord
from .decode import decode_artifact

__all__ = ["decode_artifact", "encode_artifact"]


def encode_artifact(record: ArtifactRecord) -> bytearray:
    """Writes ``record`` as ``jax.export``'s ``Exported.serialize()`` (jax 0.10.2) would.

    Args:
        record: the artifact; its VJP chain is written in full.

    Returns:
        The bytes; ``jax.export.deserialize`` and :func:`decode_artifact` read them.
    """
    from .encode import encode_artifact as encode  # loaded on first use: a reading process never writes

    return encode(record)

