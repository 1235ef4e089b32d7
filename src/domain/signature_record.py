"""A function's signature as runtimes beyond JAX keep it: the domain record without its module.

A converted directory records, per function, what the caller gives and gets
back: the pytrees of the arguments and of the result, each flat array's
dtype and (possibly symbolic) shape, and the symbolic constraints. That is
an :class:`~.artifact.ArtifactRecord` whose module is not kept (the
directory holds compiled code instead), written as JSON. A bundle's function
with the weights bound is recorded as its callers see it, the weights left
out (:func:`~.runtime_calls.with_weights_bound`).

>>> from .artifact import AvalRecord, DType, TreeSpec
>>> sig = signature(
...     "f", TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf()), TreeSpec.of_dict({})),
...     (AvalRecord(("b", "4"), DType.FLOAT32),), TreeSpec.leaf(),
...     (AvalRecord(("b",), DType.FLOAT32),), ("b >= 2",))
>>> signature_from_json(signature_to_json(sig), "manifest.json") == sig
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .artifact import ArtifactRecord, AvalRecord, DType, TreeSpec
from .bundle import JsonReader, tree_from_json, tree_to_json
from .calling_convention import MAXIMUM_VERSION
from .errors import ArtifactError


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


def signature_to_json(record: ArtifactRecord) -> dict[str, Any]:
    """The signature part of ``record`` as a JSON object."""
    return {
        "function_name": record.function_name,
        "in_tree": tree_to_json(record.in_tree),
        "in_avals": [_aval_to_json(a) for a in record.in_avals],
        "out_tree": tree_to_json(record.out_tree),
        "out_avals": [_aval_to_json(a) for a in record.out_avals],
        "constraints": list(record.constraints),
    }


def signature_from_json(doc: Any, where: str) -> ArtifactRecord:
    """The signature that :func:`signature_to_json` wrote.

    Raises:
        ArtifactError: naming ``where``, when ``doc`` is not such a signature.
    """
    r = JsonReader(doc, where)
    constraints = r.get("constraints", list)
    if not all(isinstance(c, str) for c in constraints):
        raise ArtifactError(f"{where}: 'constraints' is not a list of strings")
    try:
        return signature(
            r.get("function_name", str), tree_from_json(r.get("in_tree", dict), where),
            [_aval_from_json(a) for a in r.child_list("in_avals")],
            tree_from_json(r.get("out_tree", dict), where),
            [_aval_from_json(a) for a in r.child_list("out_avals")], constraints)
    except ValueError as exc:  # the record's own consistency checks (leaf counts)
        if isinstance(exc, ArtifactError):
            raise
        raise ArtifactError(f"{where}: inconsistent signature: {exc}") from exc


def _aval_to_json(aval: AvalRecord) -> dict[str, Any]:
    return {"shape": list(aval.shape), "dtype": aval.dtype.value}


def _aval_from_json(r: JsonReader) -> AvalRecord:
    shape = r.get("shape", list)
    if not all(isinstance(d, str) and d for d in shape):
        raise ArtifactError(f"{r.where}: 'shape' is not a list of dimension strings")
    try:
        return AvalRecord(tuple(shape), DType(r.get("dtype", str)))
    except ValueError:
        raise ArtifactError(f"{r.where}: unknown dtype {r.doc.get('dtype')!r}") from None
