"""Each cache leaf's ``(batch_axis, sequence_axis)`` from the ``cache_axes`` a user gave.

``cache_axes`` is one pair for every leaf, ``(0, 1)``, or rules: a mapping
of patterns over leaf names to pairs, in order, the first rule whose pattern
matches a leaf applying to it: ``{"*/end_index": (0, None), "*": (0, 2)}``.
A leaf's name is its key path joined by ``/`` (:mod:`jaxport.domain.leaf_names`:
``layer_0/end_index``, ``model/layers/0/self_attn/cache_index``). A pattern is
the name itself, or a shell-style pattern over it (:func:`fnmatch.fnmatchcase`):
``*`` any run of characters, ``/`` included, ``?`` one character, ``[seq]``
one of ``seq``. Every leaf must match a rule, and every rule must apply to a
leaf (one that only earlier rules' leaves match is a mistake, refused).

Leaves of lower rank than the pair asks for (the indices and positions that
libraries keep beside the keys and values) are recognised, for integer and
bool leaves: an axis beyond the leaf's rank is dropped; a scalar is shared by
the batch (a write index, transformers' ``cache_index``); a batch axis kept
must be the batch of the other leaves (a per-row index, gemma's
``end_index`` of shape ``(b,)``), else the leaf is refused, naming it. A float
leaf with an axis beyond its rank is refused (a wrong pair, not an index).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence

from jaxport.domain.errors import GenerationSpecError

#: One leaf's axes: ``(batch_axis, sequence_axis)``, None where it has none.
Axes = tuple[int | None, int | None]
#: The index-like dtypes whose leaves of lower rank are recognised.
_INDEX_DTYPES = frozenset(("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"))


def cache_path(name: str) -> str:
    """How an error names the cache leaf ``name``.

    >>> cache_path("layer_0/end_index")
    "cache['layer_0']['end_index']"
    """
    return "cache" + "".join(f"[{e!r}]" for e in name.split("/")) if name else "cache"


def resolve_cache_axes(cache_axes: object, leaves: Sequence[tuple[str, str, tuple[str, ...]]]) -> tuple[Axes, ...]:
    """Each leaf's axes, ``leaves`` given as ``(name, dtype, shape)`` (dimensions as text: ``"b"``, ``"16"``).

    >>> k = ("layer_0/k", "float32", ("b", "16", "2", "4"))
    >>> end = ("layer_0/end_index", "int32", ("b",))
    >>> resolve_cache_axes((0, 1), [k, end, ("cache_index", "int32", ())])
    ((0, 1), (0, None), (None, None))
    >>> resolve_cache_axes({"*/end_index": (0, None), "*": (0, 1)}, [k, end])
    ((0, 1), (0, None))

    Raises:
        GenerationSpecError: a malformed pair or rule; a leaf no rule matches; a rule that applies to no
            leaf; a leaf the axes do not fit (an axis repeated or negative, a float leaf's axis beyond its
            rank, an index whose batch axis is not the batch's); each names the leaf or the rule.
    """
    if isinstance(cache_axes, Mapping):
        rules = [(_pattern(p), _pair(pair, f"cache_axes[{p!r}]")) for p, pair in cache_axes.items()]
    else:
        rules = [("*", _pair(cache_axes, "cache_axes"))]
    chosen: list[tuple[str, Axes]] = []
    used: set[int] = set()
    for name, _, _ in leaves:
        index = next((i for i, (p, _) in enumerate(rules) if p == name or fnmatch.fnmatchcase(name, p)), None)
        if index is None:
            raise GenerationSpecError(cache_path(name), f"no rule of cache_axes matches the leaf '{name}'; the "
                                                        f"rules are {[p for p, _ in rules]}")
        used.add(index)
        chosen.append(rules[index])
    if isinstance(cache_axes, Mapping):
        unused = [p for i, (p, _) in enumerate(rules) if i not in used]
        if unused:
            raise GenerationSpecError(f"cache_axes[{unused[0]!r}]", "the rule applies to no leaf of the cache "
                                      f"(none matches, or earlier rules took them); the leaves are "
                                      f"{[name for name, _, _ in leaves]}")
    full = [_fits(axes, len(shape)) for (_, axes), (_, _, shape) in zip(chosen, leaves)]
    batches = {shape[axes[0]] for (_, axes), (_, _, shape), whole in zip(chosen, leaves, full)
               if whole and axes[0] is not None}
    return tuple(axes if whole else _lower(leaf, rule, axes, batches)
                 for (rule, axes), leaf, whole in zip(chosen, leaves, full))


def _fits(axes: Axes, rank: int) -> bool:
    return all(a is None or a < rank for a in axes)


def _lower(leaf: tuple[str, str, tuple[str, ...]], rule: str, axes: Axes, batches: set[str]) -> Axes:
    """The axes of a leaf of lower rank than ``axes`` ask for (see the module's docstring)."""
    name, dtype, shape = leaf
    rank = len(shape)
    how = f"give its axes by a rule, cache_axes={{'{name}': (batch_axis or None, sequence_axis or None), ...}}"
    if dtype not in _INDEX_DTYPES:
        beyond = next(what for what, a in zip(("batch", "sequence"), axes) if a is not None and a >= rank)
        raise GenerationSpecError(cache_path(name), f"its {beyond} axis {axes[0 if beyond == 'batch' else 1]} "
                                                    f"is beyond its rank {rank} ({dtype}{list(shape)}, by the "
                                                    f"rule {rule!r}): {how}")
    batch, sequence = (a if a is not None and a < rank else None for a in axes)
    if batch is not None and shape[batch] not in batches:
        raise GenerationSpecError(cache_path(name), f"an index of {dtype}{list(shape)} whose axis {batch} "
                                                    f"({shape[batch]}) is not the batch of the other leaves "
                                                    f"({sorted(batches) or 'none'}), so neither per row nor "
                                                    f"shared by the batch: {how}")
    return batch, sequence


def _pattern(pattern: object) -> str:
    if not isinstance(pattern, str):
        raise GenerationSpecError("cache_axes", f"the rule {pattern!r} is not a text (a leaf's name or a pattern)")
    return pattern


def _pair(pair: object, where: str) -> Axes:
    ok = isinstance(pair, (tuple, list)) and len(pair) == 2 and all(
        a is None or (isinstance(a, int) and not isinstance(a, bool) and a >= 0) for a in pair)
    if not ok or (pair[0] is not None and pair[0] == pair[1]):  # type: ignore[index]
        raise GenerationSpecError(where, f"{pair!r} is not (batch_axis, sequence_axis): two different axes "
                                         "(ints >= 0), or None for an axis the leaf lacks")
    assert isinstance(pair, (tuple, list))
    return pair[0], pair[1]
