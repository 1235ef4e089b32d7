"""The positions GPT of :mod:`tests.helpers.gpt_model` over a cache laid out as the model libraries lay theirs:
per layer, the keys, values and tokens beside an index leaf that the step reads and writes.

* ``per_row=True`` (gemma's ``gm.nn.Transformer``): ``layer_N/end_index`` int32[b], each row's end (so a
  batch's prompts are of one length: a row padded on the right would count its padding);
* ``per_row=False`` (transformers' Flax Llama): ``layer_N/cache_index`` int32[], one write index shared by the
  batch, advanced by each step's length.

The index read shifts the token the table picks from, so a runtime that loses the index, or mixes one row's with
another's, changes the tokens. The spec is the documented ``cache_axes=(0, 1)``, with no rule for the index.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

import jaxport
from tests.helpers import gpt_model as gpt

LAYERS = 2


def _index_name(per_row: bool) -> str:
    return "end_index" if per_row else "cache_index"


def _step(per_row: bool) -> Callable[..., Any]:
    name = _index_name(per_row)

    def step(params: dict[str, jax.Array], tokens: jax.Array, positions: jax.Array, cache: dict[str, Any]
             ) -> tuple[jax.Array, dict[str, Any]]:
        # every layer's index shifts the tokens; the last layer's logits decide (the others' add < 0.02)
        shift = sum(cache[f"layer_{n}"][name] * (n + 1) for n in range(LAYERS))
        shifted = (tokens + (shift[:, None] if per_row else shift)) % (gpt.VOCAB - 1)
        logits = jnp.zeros(())
        new = {}
        for n in range(LAYERS):
            layer = cache[f"layer_{n}"]
            kv = {k: layer[k] for k in ("k", "v", "tok")}
            out, written = gpt._positions_step(params, shifted, positions, kv)
            logits = logits + (out if n == LAYERS - 1 else 0.001 * out)
            index = layer[name]
            new[f"layer_{n}"] = {**written, name: index + tokens.shape[1]}  # as the libraries advance theirs
        return logits, new

    return step


def empty_cache(batch: Any, per_row: bool) -> dict[str, Any]:
    """The cache's shapes for ``batch`` rows (an int or a symbolic dimension)."""
    index = jax.ShapeDtypeStruct((batch,) if per_row else (), jnp.int32)
    return {f"layer_{n}": {**gpt.empty_cache(batch, shared_index=False), _index_name(per_row): index}
            for n in range(LAYERS)}


def save(path: Any, per_row: bool, **kw: Any) -> Any:
    """Saves the model as a generative bundle with ``cache_axes=(0, 1)`` (``kw``: more of the spec, of
    :func:`jaxport.save_bundle`)."""
    overwrite = kw.pop("overwrite", False)
    b, s = jaxport.symbolic_shape("b, s", constraints=(f"s <= {gpt.MAX_LENGTH}",))
    d, = jaxport.symbolic_shape("b")
    params = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), gpt.make_params())
    fn = jax.jit(_step(per_row))
    functions = {"prefill": jaxport.export(fn)(params, jax.ShapeDtypeStruct((b, s), jnp.int32),
                                               jax.ShapeDtypeStruct((b, s), jnp.int32), empty_cache(b, per_row)),
                 "decode": jaxport.export(fn)(params, jax.ShapeDtypeStruct((d, 1), jnp.int32),
                                              jax.ShapeDtypeStruct((d, 1), jnp.int32), empty_cache(d, per_row))}
    spec = jaxport.GenerationSpec(cache_axes=kw.pop("cache_axes", (0, 1)), eos_ids=(gpt.EOS,), **kw)
    jaxport.save_bundle(path, functions, gpt.make_params(), generation=spec, overwrite=overwrite)
    return path


def reference(per_row: bool, prompt: list[int], max_new_tokens: int) -> list[int]:
    """Greedy tokens of a plain ``jax.jit`` loop of the step (one prompt)."""
    params = gpt.make_params()
    step: Callable[..., Any] = jax.jit(_step(per_row))
    cache = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), empty_cache(1, per_row))
    n = len(prompt)
    logits, cache = step(params, jnp.asarray([prompt], jnp.int32), jnp.arange(n, dtype=jnp.int32)[None], cache)
    out = [int(jnp.argmax(logits[0, -1]))]
    for i in range(max_new_tokens - 1):
        logits, cache = step(params, jnp.asarray([[out[-1]]], jnp.int32), jnp.asarray([[n + i]], jnp.int32), cache)
        out.append(int(jnp.argmax(logits[0, -1])))
    return out
