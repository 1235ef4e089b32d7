"""Golden examples at save: each example run with JAX, its inputs and outputs kept for the bundle.

``save_bundle(..., examples={"predict": [(args, kwargs), ...]})`` calls each
function on each example (with the bundle's weights bound, for a function
that takes them) in the saving process, and keeps the caller's inputs and the
outputs as the arrays of ``examples.safetensors`` (see
:mod:`jaxport.domain.bundle.manifest` for the records, :mod:`jaxport.domain.bundle.names`
for their names). A numerics check runs them again elsewhere
(:mod:`jaxport.application.conversion.numerics`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, BinaryIO

import jax
import numpy as np

from jaxport.adapters.storage.atomic_directory import sha256_many
from jaxport.adapters.jax.bundles.weights import stored_weight
from jaxport.adapters.storage.safetensors_file import encode_header, raw_bytes, write_weights
from jaxport.domain.artifact.record import TreeSpec
from jaxport.domain.bundle.manifest import Example
from jaxport.domain.bundle.names import example_names
from jaxport.domain.errors import ArtifactError, BundleError, JaxportError
from jaxport.domain.calls.front import caller_tree
from jaxport.adapters.jax.exported.exported import Exported

#: The ``format`` in the examples file's safetensors metadata.
EXAMPLES_FORMAT = "jaxport-examples"


@dataclasses.dataclass(frozen=True)
class RecordedExamples:
    """The examples' records and a writer of their file (None without examples)."""

    examples: tuple[Example, ...]
    write: Callable[[BinaryIO], None] | None = None


def record_examples(functions: Mapping[str, Exported], takes_params: Mapping[str, bool], params: Any,
                    weights_count: int, examples: Mapping[str, Any] | None) -> RecordedExamples:
    """Runs every example through its function with JAX and keeps its inputs and outputs.

    Args:
        functions, takes_params: the bundle's functions and which take the weights.
        params: the weights, bound as the first argument of those that do.
        weights_count: the number of the weights' leaves.
        examples: function name -> a list of ``(args, kwargs)`` pairs.

    Raises:
        BundleError: an example names a function that is not in the bundle, is
            not an ``(args, kwargs)`` pair, or is refused by its function (the
            message names the function, the example and why), or holds an
            array a bundle cannot store.
    """
    if not examples:
        return RecordedExamples(())
    unknown = sorted(set(examples) - set(functions))
    if unknown:
        raise BundleError(f"examples names functions that are not in the bundle: {unknown}")
    records: list[Example] = []
    arrays: list[np.ndarray] = []
    for name, listed in examples.items():
        exp = functions[name]
        in_tree, out_tree = _trees(name, exp, weights_count if takes_params[name] else None)
        if isinstance(listed, (str, bytes)) or not isinstance(listed, Sequence):
            raise BundleError(f"examples[{name!r}] is a {type(listed).__name__}: give a list of "
                              "(args, kwargs) pairs")
        for index, pair in enumerate(listed):
            args, kwargs = _pair(name, index, pair)
            call_args = (params, *args) if takes_params[name] else args
            try:
                result = exp.call(*call_args, **kwargs)
            except (JaxportError, TypeError, ValueError) as exc:
                raise BundleError(f"The example {index} of '{name}' cannot be run by the function: "
                                  f"{exc}") from exc
            avals = exp.in_avals[len(exp.in_avals) - in_tree.num_leaves:]
            inputs = [leaf if hasattr(leaf, "dtype") else np.asarray(leaf, aval.dtype)
                      for leaf, aval in zip(jax.tree.leaves((args, kwargs)), avals, strict=True)]
            in_names, out_names = example_names(name, index, in_tree, out_tree)
            stored = [stored_weight(n, leaf, "example's array") for n, leaf in
                      zip((*in_names, *out_names), [*inputs, *jax.tree.leaves(result)], strict=True)]
            digests = sha256_many([raw_bytes(host) for _, host in stored])
            kept = [dataclasses.replace(record, sha256=d) for (record, _), d in zip(stored, digests)]
            records.append(Example(name, index, in_tree, out_tree, tuple(kept[:len(in_names)]),
                                   tuple(kept[len(in_names):])))
            arrays.extend(host for _, host in stored)
    every = [w for e in records for w in e.arrays]
    header, order = encode_header(every, {"format": EXAMPLES_FORMAT})
    data = [raw_bytes(a) for a in arrays]

    def write(stream: BinaryIO) -> None:
        write_weights(stream, header, order, data)

    return RecordedExamples(tuple(records), write)


def _trees(name: str, exp: Exported, weights_count: int | None) -> tuple[TreeSpec, TreeSpec]:
    """The caller's ``(args, kwargs)`` tree (the weights left out) and the result's tree."""
    in_tree = exp.record.in_tree
    try:
        caller = in_tree if weights_count is None else caller_tree(name, in_tree, weights_count)
    except ArtifactError as exc:  # checked against the weights already
        raise BundleError(str(exc)) from exc
    return caller, exp.record.out_tree


def _pair(name: str, index: int, pair: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if (not isinstance(pair, (tuple, list)) or len(pair) != 2 or not isinstance(pair[0], (tuple, list))
            or not isinstance(pair[1], Mapping)):
        raise BundleError(f"The example {index} of '{name}' is not an (args, kwargs) pair: give "
                          "a tuple of the positional arguments and a dict of the keyword ones, "
                          "e.g. ((x,), {})")
    return tuple(pair[0]), dict(pair[1])
