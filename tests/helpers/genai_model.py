"""A small GPT laid out as ONNX Runtime GenAI's decoders are, each next token a table lookup with a clear margin.

One step function serves as the prefill and the decode: ``(tokens, mask,
cache)`` where ``tokens`` is ``int32[b, s]``, ``mask`` is ``int32[b, t]``
(``t``: its own dimension, the tokens written so far, or the whole cache:
the model reads the slots to write from the last column any row holds, so
GenAI's growing mask and jaxport's mask of the whole cache give the same
step), and ``cache`` is a list of layers, each ``{"key", "value"}`` of
``float32[b, heads, max_length, head_size]``. It returns ``(logits
float32[b, s, vocab], cache)``.

As in :mod:`tests.helpers.gpt_model`, the attention adds at most 0.1 to a
logit while the table's pick gets 10; the pick depends on the token, its
position and the sum of the tokens the row's cache holds (read back from
channel 0 of layer 0's keys, where each step writes its tokens), so a lost
cache, a wrong write slot or a wrong position changes the tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxport

VOCAB = 32
HEADS = 2
HEAD_SIZE = 4
LAYERS = 2
MAX_LENGTH = 16
EOS = 31
WIDTH = HEADS * HEAD_SIZE


def make_params(seed: int = 0) -> dict[str, Any]:
    """The weights: an embedding, per layer the key, value and query projections, the output projection."""
    rng = np.random.default_rng(seed)

    def dense(*shape: int) -> jax.Array:
        return jnp.asarray(rng.normal(size=shape) / np.sqrt(shape[0]), jnp.float32)

    return {"embed": dense(VOCAB, WIDTH), "out": dense(WIDTH, VOCAB),
            "layers": [{"wq": dense(WIDTH, WIDTH), "wk": dense(WIDTH, WIDTH), "wv": dense(WIDTH, WIDTH)}
                       for _ in range(LAYERS)]}


def step(params: dict[str, Any], tokens: jax.Array, mask: jax.Array, cache: list[dict[str, jax.Array]]
         ) -> tuple[jax.Array, list[dict[str, jax.Array]]]:
    """The logits of ``tokens`` and the cache with them written (see the module's docstring)."""
    b, s = tokens.shape
    t = mask.shape[1]
    total = jnp.max(jnp.where(jnp.any(mask > 0, axis=0), jnp.arange(t) + 1, 0))
    start = (total - s).astype(jnp.int32)
    slots = start + jnp.arange(s, dtype=jnp.int32)
    columns = jnp.arange(MAX_LENGTH)
    held = jnp.take(mask, jnp.minimum(columns, t - 1), axis=1) * (columns < t)[None, :]  # (b, max_length)
    before = columns[None, None, :] <= slots[None, :, None]
    positions = jnp.sum(jnp.where(before, held[:, None, :], 0), axis=-1) - 1  # a cumsum of the mask, at the slots
    visible = before & (held[:, None, :] > 0)  # (b, s, max_length)
    x = params["embed"][tokens]
    split = lambda a: a.reshape(b, s, HEADS, HEAD_SIZE).transpose(0, 2, 1, 3)  # noqa: E731
    new, attended = [], x
    for index, (layer, past) in enumerate(zip(params["layers"], cache)):
        k = split(x @ layer["wk"])
        if index == 0:  # channel 0 of layer 0's keys holds the tokens: the table reads the history from it
            channel = (jnp.arange(HEADS)[:, None, None] == 0) & (jnp.arange(HEAD_SIZE)[None, None, :] == 0)
            k = jnp.where(channel, tokens.astype(jnp.float32)[:, None, :, None], k)
        keys = jax.lax.dynamic_update_slice(past["key"], k, (0, 0, start, 0))
        values = jax.lax.dynamic_update_slice(past["value"], split(x @ layer["wv"]), (0, 0, start, 0))
        new.append({"key": keys, "value": values})
        scores = jnp.where(visible[:, None], split(attended @ layer["wq"]) @ jnp.swapaxes(keys, -1, -2), -1e9)
        attended = (jax.nn.softmax(scores, axis=-1) @ values).transpose(0, 2, 1, 3).reshape(b, s, WIDTH)
    history = jnp.sum(jnp.where(visible, jnp.round(new[0]["key"][:, 0, None, :, 0]), 0), axis=-1).astype(tokens.dtype)
    pick = (5 * tokens + 3 * positions + history + 1) % (VOCAB - 1)  # never EOS: tests stop with `stop`
    return 10.0 * jax.nn.one_hot(pick, VOCAB) + 0.1 * jnp.tanh(attended @ params["out"]), new


def empty_cache(batch: Any) -> list[dict[str, Any]]:
    """The cache's shapes for ``batch`` rows (an int or a symbolic dimension)."""
    leaf = jax.ShapeDtypeStruct((batch, HEADS, MAX_LENGTH, HEAD_SIZE), jnp.float32)
    return [{"key": leaf, "value": leaf} for _ in range(LAYERS)]


def export_steps(mask_length: int | None = None) -> dict[str, jaxport.Exported]:
    """The prefill and the decode, exported for any batch, prompt length and mask length (or a mask of
    ``mask_length`` columns: a model GenAI cannot run, its mask not growing with the tokens)."""
    ints = lambda *shape: jax.ShapeDtypeStruct(shape, jnp.int32)  # noqa: E731
    weights = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), make_params())
    fn = jax.jit(step)
    if mask_length is not None:
        b, s = jaxport.symbolic_shape("b, s", constraints=(f"s <= {MAX_LENGTH}",))
        d, = jaxport.symbolic_shape("b")
        return {"prefill": jaxport.export(fn)(weights, ints(b, s), ints(b, mask_length), empty_cache(b)),
                "decode": jaxport.export(fn)(weights, ints(d, 1), ints(d, mask_length), empty_cache(d))}
    b, s, t = jaxport.symbolic_shape("b, s, t", constraints=(f"s <= {MAX_LENGTH}", f"t <= {MAX_LENGTH}"))
    d, u = jaxport.symbolic_shape("b, t", constraints=(f"t <= {MAX_LENGTH}",))  # the decode's scope: no s
    return {"prefill": jaxport.export(fn)(weights, ints(b, s), ints(b, t), empty_cache(b)),
            "decode": jaxport.export(fn)(weights, ints(d, 1), ints(d, u), empty_cache(d))}


def spec(**kw: Any) -> jaxport.GenerationSpec:
    """The model's generation spec."""
    return jaxport.GenerationSpec(prefill_inputs=("tokens", "mask", "cache"),  # type: ignore[arg-type]
                                  cache_axes=(0, 2), eos_ids=(EOS,), **kw)


def save(path: Path, mask_length: int | None = None, **kw: Any) -> Path:
    """Saves the model as a generative bundle at ``path``."""
    jaxport.save_bundle(path, export_steps(mask_length), make_params(), generation=spec(**kw))
    return path


def reference(prompt: list[int], max_new_tokens: int) -> list[int]:
    """Greedy tokens of a plain ``jax.jit`` loop of the step, its mask growing as GenAI's does."""
    params = make_params()
    jitted: Callable[..., Any] = jax.jit(step)
    cache = jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), empty_cache(1))
    logits, cache = jitted(params, jnp.asarray([prompt], jnp.int32), jnp.ones((1, len(prompt)), jnp.int32), cache)
    out = [int(jnp.argmax(logits[0, -1]))]
    for i in range(max_new_tokens - 1):
        mask = jnp.ones((1, len(prompt) + i + 1), jnp.int32)
        logits, cache = jitted(params, jnp.asarray([[out[-1]]], jnp.int32), mask, cache)
        out.append(int(jnp.argmax(logits[0, -1])))
    return out
