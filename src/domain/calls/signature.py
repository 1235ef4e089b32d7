"""A converted function's signature as the call checks read it: a domain record without a module.

The call front (:mod:`.front`) checks calls against an
:class:`~jaxport.domain.artifact.record.ArtifactRecord`; a converted directory's
:class:`~jaxport.domain.converted.manifest.Signature` becomes one here, its module not kept (the
directory holds compiled code instead), the weights already left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, TreeSpec
from jaxport.domain.artifact.calling_convention import MAXIMUM_VERSION


def signature(function_name: str, in_tree: TreeSpec, in_avals: Sequence[AvalRecord],
              out_tree: TreeSpec, out_avals: Sequence[AvalRecord],
              constraints: Sequence[str] = ()) -> ArtifactRecord:
    """The record of a signature: one device, on CPU, no module, every argument kept."""
    return ArtifactRecord(
        function_name=function_name, in_tree=in_tree, in_avals=tuple(in_avals),
        out_tree=out_tree, out_avals=tuple(out_avals),
        in_shardings=(None,) * len(in_avals), out_shardings=(None,) * len(out_avals),
        nr_devices=1, platforms=("cpu",), ordered_effects=(), unordered_effects=(),
        disabled_checks=(), mlir_module_serialized=b"", calling_convention_version=MAXIMUM_VERSION,
        module_kept_var_idx=tuple(range(len(in_avals))),
        uses_global_constants=any(not d.isdigit() for a in in_avals for d in a.shape),
        constraints=tuple(constraints))
