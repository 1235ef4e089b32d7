"""The cache-axes resolver on caches laid out as the JAX model libraries build them (no JAX here).

* transformers' Flax Llama/Mistral (4.57, ``modeling_flax_llama.py``): per layer, under
  ``model/layers/N/self_attn``, ``cached_key`` and ``cached_value`` float32[b, s, kv_heads, head_dim]
  and ``cache_index`` int32[] (``jnp.array(0, dtype=jnp.int32)``: one write index shared by the batch).
* gemma 4.0's ``gm.nn.Transformer`` (not installed here; its layout as issue 62 reports it): per layer,
  under ``layer_N``, ``k`` and ``v`` [b, s, kv_heads, head_dim] and ``end_index`` int32[b] (per row).
"""

from __future__ import annotations

import pytest

from jaxport.domain.errors import GenerationSpecError
from jaxport.domain.generation.cache_axes import resolve_cache_axes
from jaxport.domain.leaf_names import weight_name

Leaf = tuple[str, str, tuple[str, ...]]


def _transformers(layers: int = 3, batch: str = "b", length: str = "64") -> list[Leaf]:
    kv = (batch, length, "2", "32")
    out: list[Leaf] = []
    for n in range(layers):  # flax sorts a dict's keys when it flattens it
        prefix = ["model", "layers", str(n), "self_attn"]
        out += [(weight_name(prefix + ["cache_index"]), "int32", ()),
                (weight_name(prefix + ["cached_key"]), "float32", kv),
                (weight_name(prefix + ["cached_value"]), "float32", kv)]
    return out


def _gemma(layers: int = 4, batch: str = "b", dtype: str = "bfloat16") -> list[Leaf]:
    out: list[Leaf] = []
    for n in range(layers):
        out += [(f"layer_{n}/end_index", "int32", (batch,)), (f"layer_{n}/k", dtype, (batch, "64", "1", "64")),
                (f"layer_{n}/v", dtype, (batch, "64", "1", "64"))]
    return out


def _by_name(leaves: list[Leaf], axes: tuple[tuple[int | None, int | None], ...]
             ) -> dict[str, tuple[int | None, int | None]]:
    return {name: pair for (name, _, _), pair in zip(leaves, axes)}


@pytest.mark.parametrize("batch", ["b", "2"])
def test_transformers_cache_index_is_recognised_as_shared_with_the_documented_pair(batch: str) -> None:
    leaves = _transformers(batch=batch)
    axes = _by_name(leaves, resolve_cache_axes((0, 1), leaves))
    assert axes["model/layers/1/self_attn/cache_index"] == (None, None)
    assert axes["model/layers/1/self_attn/cached_key"] == (0, 1)
    assert {pair for name, pair in axes.items() if name.endswith("cache_index")} == {(None, None)}
    assert {pair for name, pair in axes.items() if not name.endswith("cache_index")} == {(0, 1)}


@pytest.mark.parametrize("batch", ["b", "3"])
def test_gemma_end_index_is_recognised_as_per_row_with_the_documented_pair(batch: str) -> None:
    leaves = _gemma(batch=batch)
    axes = _by_name(leaves, resolve_cache_axes((0, 1), leaves))
    assert [axes[f"layer_{n}/end_index"] for n in range(4)] == [(0, None)] * 4
    assert [axes[f"layer_{n}/{kv}"] for n in range(4) for kv in "kv"] == [(0, 1)] * 8


def test_the_first_matching_rule_applies() -> None:
    # gemma's cache laid out otherwise: the heads before the sequence
    leaves: list[Leaf] = [(f"layer_{n}/{kv}", "float32", ("b", "1", "64", "64")) for n in range(2) for kv in "kv"]
    leaves += [("layer_0/end_index", "int32", ("b",)), ("layer_1/end_index", "int32", ("b",))]
    axes = _by_name(leaves, resolve_cache_axes({"*/end_index": (0, None), "*": (0, 2)}, leaves))
    assert axes == {**{f"layer_{n}/{kv}": (0, 2) for n in range(2) for kv in "kv"},
                    "layer_0/end_index": (0, None), "layer_1/end_index": (0, None)}
    # the index recognised under a rule for the keys and values too, and exact names still rules
    assert resolve_cache_axes({"*": (0, 2)}, leaves) == ((0, 2),) * 4 + ((0, None),) * 2
    exact = {name: (0, 2) for name, _, _ in leaves[:4]} | {"layer_0/end_index": (None, None), "layer_1/*": (0, None)}
    assert resolve_cache_axes(exact, leaves) == ((0, 2),) * 4 + ((None, None), (0, None))


def test_a_leaf_no_rule_matches_is_named() -> None:
    leaves = _gemma(2)
    with pytest.raises(GenerationSpecError, match=r"cache\['layer_0'\]\['end_index'\]: no rule of cache_axes "
                                                  r"matches the leaf 'layer_0/end_index'; the rules are \['\*/k', "):
        resolve_cache_axes({"*/k": (0, 1), "*/v": (0, 1)}, leaves)


@pytest.mark.parametrize("rules", [{"*/cache_idx": (None, None), "*": (0, 1)},  # a typo
                                   {"*": (0, 1), "*/end_index": (0, None)}])   # after a rule that takes all
def test_a_rule_that_applies_to_no_leaf_is_named(rules: dict[str, tuple[int | None, int | None]]) -> None:
    bad = next(iter(p for p in rules if p != "*"))
    with pytest.raises(GenerationSpecError, match=rf"cache_axes\['{bad.replace('*', '.')}'\]: the rule applies to "
                                                  r"no leaf of the cache .*the leaves are \['layer_0/end_index'"):
        resolve_cache_axes(rules, _gemma(2))


def test_an_index_whose_axis_is_not_the_batch_is_refused_naming_it() -> None:
    leaves = _gemma(1) + [("layer_0/window", "int32", ("4",))]
    with pytest.raises(GenerationSpecError, match=r"cache\['layer_0'\]\['window'\]: an index of int32\['4'\] whose "
                                                  r"axis 0 \(4\) is not the batch of the other leaves \(\['b'\]\)"):
        resolve_cache_axes((0, 1), leaves)
    assert resolve_cache_axes({"*/window": (None, None), "*": (0, 1)}, leaves)[-1] == (None, None)


def test_a_float_leaf_of_lower_rank_is_refused_not_guessed() -> None:
    leaves = [("k", "float32", ("b", "16", "4")), ("scale", "float32", ("b",))]
    with pytest.raises(GenerationSpecError, match=r"cache\['scale'\]: its sequence axis 1 is beyond its rank 1 "
                                                  r"\(float32\['b'\], by the rule '\*'\)"):
        resolve_cache_axes((0, 1), leaves)
    assert resolve_cache_axes({"scale": (0, None), "k": (0, 1)}, leaves) == ((0, 1), (0, None))


@pytest.mark.parametrize("axes", [(0, 0), (-1, 1), (0,), (True, 1), "01", (0, 1.0)])
def test_a_malformed_pair_is_refused(axes: object) -> None:
    with pytest.raises(GenerationSpecError, match=r"is not \(batch_axis, sequence_axis\)"):
        resolve_cache_axes(axes, _gemma(1))
    with pytest.raises(GenerationSpecError, match=r"fit cache_axes\['\*'\]: .* is not \(batch_axis"):
        resolve_cache_axes({"*": axes}, _gemma(1))


def test_a_lone_array_and_an_empty_cache() -> None:
    assert resolve_cache_axes((0, 1), [("", "float32", ("b", "8"))]) == ((0, 1),)
    assert resolve_cache_axes((0, 1), []) == ()
    with pytest.raises(GenerationSpecError, match=r"the rule applies to no leaf"):
        resolve_cache_axes({"*": (0, 1)}, [])
