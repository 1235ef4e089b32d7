"""Checking a generation spec against the functions it names, at save (before anything is written).

:func:`resolve` reads, from the prefill's and the decode's records, what they
say (the cache's leaves, the logits' vocabulary, the maximum length) and
checks that the two functions agree with each other and with the spec: the
same cache in and out of both (leaf by leaf: the dtype, the rank, every static
dimension but the batch's, the sequence length the cache's), each axis within
its leaf's rank, a cache length that the prefill's shape constraints allow,
end-of-text and padding ids inside the vocabulary. Each refusal is a
:class:`~jaxport.errors.GenerationSpecError` naming the function or the leaf.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, TreeKind, TreeSpec
from jaxport.domain.leaf_names import weight_name
from jaxport.domain.calls.front import check_call
from jaxport.domain.calls.signature import Signature
from jaxport.domain.errors import (
    ArtifactError, CallError, GenerationSpecError, ShapeAssertionError, UnsolvableDimensionError
)
from jaxport.domain.generation.cache_axes import cache_path as _path, resolve_cache_axes
from jaxport.domain.generation.spec import CacheLeaf, GenerationSpec, StepInput, as_inputs
from jaxport.domain.specs import ArraySpec

_INTEGER = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


@dataclass(frozen=True, slots=True)
class _Step:
    """One function's arguments after the weights, and its results, as flat avals."""

    name: str
    record: ArtifactRecord
    inputs: tuple[StepInput, ...]
    #: Per input: its subtree and its flat avals.
    args: tuple[tuple[TreeSpec, tuple[AvalRecord, ...]], ...]
    #: The leaves before the first input (the weights).
    offset: int
    logits: AvalRecord
    cache_out: tuple[TreeSpec, tuple[AvalRecord, ...]]

    def arg(self, kind: StepInput) -> tuple[TreeSpec, tuple[AvalRecord, ...]] | None:
        return self.args[self.inputs.index(kind)] if kind in self.inputs else None


def resolve(spec: GenerationSpec, records: Mapping[str, ArtifactRecord], takes_params: Mapping[str, bool]
            ) -> GenerationSpec:
    """The spec with the cache's leaves, the vocabulary size and the maximum length filled in.

    Args:
        spec: what the user gave.
        records: the bundle's functions' records, by name.
        takes_params: whether each function takes the weights first.

    Raises:
        GenerationSpecError: the spec does not fit the functions; the message names the function or the leaf.
    """
    steps = [_step(name, inputs, records, takes_params) for name, inputs in spec.steps]
    prefill, decode = steps
    leaves = _cache_leaves(spec, prefill)
    max_length = _max_length(spec, leaves)
    for step in steps:
        _check_cache(step, leaves, max_length)
    vocab = _vocab_size(spec, steps)
    for what, ids in (("eos_ids", spec.eos_ids), ("pad_id", (spec.pad_id,))):
        outside = [i for i in ids if not 0 <= i < vocab]
        if outside:
            raise GenerationSpecError(f"'{prefill.name}'", f"{what} {outside} are outside the vocabulary [0, {vocab})")
    for step in steps:
        _check_step_shapes(step)
    resolved = dataclasses.replace(spec, prefill_inputs=prefill.inputs, decode_inputs=decode.inputs,
                                   cache=leaves, max_length=max_length, vocab_size=vocab)
    _check_prefill_allows(resolved, prefill)
    return resolved


def _step(name: str, names: Sequence[StepInput], records: Mapping[str, ArtifactRecord],
          takes_params: Mapping[str, bool]) -> _Step:
    where = f"the function '{name}'"
    if name not in records:
        raise GenerationSpecError(where, f"the bundle has no such function; it has {sorted(records)}")
    inputs = as_inputs(names, where)
    record = records[name]
    args, kwargs = record.in_tree.children
    if kwargs.children:
        raise GenerationSpecError(where, "it takes keyword arguments; a step takes positional ones only")
    skip = 1 if takes_params.get(name, True) else 0
    if len(args.children) != skip + len(inputs):
        raise GenerationSpecError(where, f"it takes {len(args.children) - skip} arguments after the weights, "
                                         f"the spec names {len(inputs)}: {[k.value for k in inputs]}")
    offset = sum(c.num_leaves for c in args.children[:skip])
    flat: list[tuple[TreeSpec, tuple[AvalRecord, ...]]] = []
    at = offset
    for child in args.children[skip:]:
        flat.append((child, record.in_avals[at:at + child.num_leaves]))
        at += child.num_leaves
    out = record.out_tree
    if out.kind not in (TreeKind.TUPLE, TreeKind.LIST) or len(out.children) != 2 or out.children[0].kind is not TreeKind.LEAF:
        raise GenerationSpecError(where, "it does not return (logits, cache)")
    cache_out = (out.children[1], record.out_avals[1:])
    return _Step(name, record, inputs, tuple(flat), offset, record.out_avals[0], cache_out)


def _leaf_names(tree: TreeSpec) -> list[str]:
    return [weight_name([str(k) for k in keys]) for keys in tree.leaf_keys()]


def _cache_leaves(spec: GenerationSpec, prefill: _Step) -> tuple[CacheLeaf, ...]:
    tree, avals = prefill.arg(StepInput.CACHE) or (TreeSpec.leaf(), ())
    names = _leaf_names(tree)
    axes = resolve_cache_axes(spec.cache_axes, [(n, a.dtype.value, tuple(a.shape)) for n, a in zip(names, avals)])
    return tuple(CacheLeaf(name, aval.dtype.value, tuple(int(d) if d.isdigit() else d for d in aval.shape), *pair)
                 for name, aval, pair in zip(names, avals, axes))


def _check_cache(step: _Step, leaves: Sequence[CacheLeaf], max_length: int) -> None:
    """Both functions take the cache and return it with the prefill's leaves, shapes and dtypes: every
    static dimension the prefill's (the batch's aside), the sequence's ``max_length``."""
    expected = {leaf.name: leaf for leaf in leaves}
    for what, (tree, avals) in (("arguments", step.arg(StepInput.CACHE) or (TreeSpec.leaf(), ())),
                                ("results", step.cache_out)):
        got = dict(zip(_leaf_names(tree), avals))
        for name, leaf in expected.items():
            if name not in got:
                raise GenerationSpecError(_path(name), f"the leaf is missing from the cache in the {what} of "
                                                       f"'{step.name}'")
            aval = got[name]
            if aval.dtype.value != leaf.dtype or len(aval.shape) != len(leaf.shape):
                raise GenerationSpecError(_path(name), f"'{step.name}' has it as {aval} in its {what}, the "
                                                       f"prefill takes {leaf.dtype}{list(leaf.shape)}")
            _check_dimensions(step.name, what, name, aval, leaf, max_length)
        extra = sorted(set(got) - set(expected))
        if extra:
            raise GenerationSpecError(_path(extra[0]), f"'{step.name}' has it in the cache of its {what}, "
                                                       "the prefill's cache lacks it")


def _check_dimensions(function: str, what: str, name: str, aval: AvalRecord, leaf: CacheLeaf,
                      max_length: int) -> None:
    """The static dimensions of ``aval`` (the leaf ``name`` in the ``what`` of ``function``) are the
    prefill's ``leaf``'s, its sequence length ``max_length``; its batch dimension may differ."""
    for axis, (got, expected) in enumerate(zip(aval.shape, leaf.shape)):
        if axis == leaf.batch_axis or not got.isdigit():
            continue
        if axis == leaf.sequence_axis and int(got) != max_length:
            raise GenerationSpecError(_path(name), f"its sequence length is {got} in the {what} of '{function}' "
                                                   f"({aval}), the cache holds {max_length} (the prefill's "
                                                   f"{leaf.dtype}{list(leaf.shape)})")
        if axis != leaf.sequence_axis and isinstance(expected, int) and int(got) != expected:
            raise GenerationSpecError(_path(name), f"its axis {axis} is {got} in the {what} of '{function}' "
                                                   f"({aval}), {expected} in the prefill's cache "
                                                   f"({leaf.dtype}{list(leaf.shape)})")


def _max_length(spec: GenerationSpec, leaves: Sequence[CacheLeaf]) -> int:
    lengths = {leaf.name: leaf.shape[leaf.sequence_axis] for leaf in leaves if leaf.sequence_axis is not None}
    static = {name: d for name, d in lengths.items() if isinstance(d, int)}
    if len(set(static.values())) > 1:
        raise GenerationSpecError(_path(min(static)), f"the cache's leaves have sequence lengths {static}")
    if spec.max_length is None:
        if not static:
            raise GenerationSpecError("the cache", "no leaf has a static sequence length: give max_length")
        return next(iter(static.values()))
    if spec.max_length < 2:
        raise GenerationSpecError("the cache", f"max_length {spec.max_length} holds no prompt and token")
    for name, d in static.items():
        if d != spec.max_length:
            raise GenerationSpecError(_path(name), f"its sequence length {d} is not max_length {spec.max_length}")
    return spec.max_length


def _vocab_size(spec: GenerationSpec, steps: Sequence[_Step]) -> int:
    for step in steps:
        if len(step.logits.shape) not in (2, 3):
            raise GenerationSpecError(f"the function '{step.name}'", f"its logits {step.logits} are not "
                                                                     "(batch, [length,] vocab)")
    last = steps[0].logits.shape[-1]
    if not last.isdigit():
        raise GenerationSpecError(f"the function '{steps[0].name}'", f"its logits' vocabulary {last!r} is not static")
    vocab = int(last)
    if spec.vocab_size is not None and spec.vocab_size != vocab:
        raise GenerationSpecError(f"the function '{steps[0].name}'",
                                  f"its logits have {vocab} entries, vocab_size is {spec.vocab_size}")
    return vocab


def _check_step_shapes(step: _Step) -> None:
    where = f"the function '{step.name}'"
    tokens = step.arg(StepInput.TOKENS)
    assert tokens is not None  # as_inputs requires them
    (tree, avals) = tokens
    if tree.kind is not TreeKind.LEAF or avals[0].dtype.value not in _INTEGER or len(avals[0].shape) not in (1, 2):
        raise GenerationSpecError(where, f"its tokens are {avals[0] if avals else tree.kind.value}, not integers "
                                         "of shape (batch, length) or (batch,)")
    for kind in (StepInput.POSITIONS, StepInput.MASK):
        found = step.arg(kind)
        if found is not None and (found[0].kind is not TreeKind.LEAF or found[1][0].dtype.value not in
                                  _INTEGER + ("bool",)):
            raise GenerationSpecError(where, f"its {kind.value} are not one array of integers")


def _check_prefill_allows(spec: GenerationSpec, prefill: _Step) -> None:
    """A call of the prefill with one row, one token and a cache of ``max_length`` passes its constraints."""
    assert spec.max_length is not None
    leaves = [ArraySpec(tuple(int(d) if d.isdigit() else 1 for d in aval.shape), aval.dtype.value)
              for aval in prefill.record.in_avals[:prefill.offset]]
    for kind, (_, avals) in zip(prefill.inputs, prefill.args):
        for i, aval in enumerate(avals):
            if kind is StepInput.CACHE:
                shape = spec.cache[i].empty_shape(1, spec.max_length)
            elif kind is StepInput.MASK:
                shape = tuple(spec.max_length if axis == 1 else 1 for axis in range(len(aval.shape)))
            else:
                shape = tuple(int(d) if d.isdigit() else 1 for d in aval.shape)
            leaves.append(ArraySpec(shape, aval.dtype.value))
    try:
        check_call(prefill.record.signature, leaves)
    except (CallError, ShapeAssertionError, UnsolvableDimensionError) as exc:
        raise GenerationSpecError(f"the function '{prefill.name}'",
                                  f"it refuses a cache of max_length {spec.max_length}: {exc}") from exc


def check_loaded(spec: GenerationSpec, signatures: Mapping[str, Signature], where: str) -> None:
    """At load: the recorded spec still fits the functions' signatures (a manifest changed and re-sealed since
    its save): each step's function exists and takes the spec's inputs, its cache the spec's leaves (names,
    dtypes, ranks, every static dimension, the sequence's the cache's length). Checked before a cache is made.

    Raises:
        ArtifactError: naming ``where`` and the function or the leaf that does not fit.
    """
    for name, inputs in spec.steps:
        signature = signatures.get(name)
        if signature is None:
            raise ArtifactError(f"{where}: the generation spec names the function '{name}', which it lacks")
        args = signature.in_tree.children[0].children if signature.in_tree.children else ()
        if len(args) != len(inputs):
            raise ArtifactError(f"{where}: '{name}' takes {len(args)} arguments, the generation spec names "
                                f"{len(inputs)}")
        at = 0
        for kind, child in zip(inputs, args):
            if kind is StepInput.CACHE:
                _fits(spec, name, _leaf_names(child), signature.in_avals[at:at + child.num_leaves], where)
            at += child.num_leaves


def _fits(spec: GenerationSpec, function: str, names: Sequence[str], avals: Sequence[AvalRecord], where: str) -> None:
    if list(names) != [leaf.name for leaf in spec.cache]:
        raise ArtifactError(f"{where}: the cache that '{function}' takes holds {list(names)}, the generation spec "
                            f"{[leaf.name for leaf in spec.cache]}")
    for leaf, aval in zip(spec.cache, avals):
        wrong = aval.dtype.value != leaf.dtype or len(aval.shape) != len(leaf.shape) or any(
            got.isdigit() and axis != leaf.batch_axis
            and int(got) != (spec.max_length if axis == leaf.sequence_axis else leaf.shape[axis])
            for axis, got in enumerate(aval.shape))
        if wrong:
            raise ArtifactError(f"{where}: '{function}' takes {_path(leaf.name)} as {aval}, the generation spec "
                                f"has {leaf.dtype}{list(leaf.shape)} of {spec.max_length} positions")
