"""A GPT-small-sized model that generates: ``models.py``'s transformer with a key/value cache.

6 layers of width 512, 8 heads, a vocabulary of 8,192 (about 88 MiB of
float32 weights): a prefill over ``int32[b, s]`` tokens and a decode over
``int32[b, 1]``, each with per-row positions, the cache one ``k`` and one ``v``
of ``f32[b, max_length, 512]`` per layer. :func:`save` writes it as a
generative bundle; :func:`jit_loop` is the hand-written ``jax.jit`` loop
(the cache donated) the benchmarks compare with.

:func:`save_genai` writes the same transformer laid out as ONNX Runtime
GenAI's decoders are (:func:`genai_step`: one step for the prefill and the
decode over ``(tokens, mask, cache)``, the mask as long as the tokens so
far, a ``key`` and a ``value`` of ``f32[b, 8, max_length, 64]`` per layer),
so that its ONNX directory runs on GenAI too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxport

from .models import GPT_HEADS as GPT_HEADS, GPT_LAYERS as GPT_LAYERS, GPT_WIDTH as GPT_WIDTH, _layer_norm, gpt_params


def params(max_length: int, seed: int = 0) -> dict[str, Any]:
    """``models.gpt_params`` with ``max_length`` positions."""
    made = gpt_params(seed)
    made["positions"] = (np.random.default_rng(seed + 1).standard_normal((max_length, GPT_WIDTH), np.float32) * 0.02)
    return made


def step(params: dict[str, Any], tokens: jax.Array, positions: jax.Array, cache: list[dict[str, jax.Array]]
         ) -> tuple[jax.Array, list[dict[str, jax.Array]]]:
    """The logits ``f32[b, s, vocab]`` of ``tokens`` at ``positions``, and the cache with them written."""
    b, s = tokens.shape
    width, heads = GPT_WIDTH, GPT_HEADS
    max_length = cache[0]["k"].shape[1]
    h = params["embed"][tokens] + params["positions"][positions]
    rows = jnp.arange(b)[:, None]
    seen = jnp.arange(max_length)[None, None, None, :] <= positions[:, None, :, None]
    new = []
    split = lambda a: a.reshape(b, a.shape[1], heads, width // heads).transpose(0, 2, 1, 3)  # noqa: E731
    for layer, held in zip(params["layers"], cache):
        q, k, v = jnp.split(_layer_norm(h, layer["norm1"]) @ layer["qkv"], 3, axis=-1)
        k_all = held["k"].at[rows, positions].set(k)
        v_all = held["v"].at[rows, positions].set(v)
        new.append({"k": k_all, "v": v_all})
        h = _attended(layer, h, split(q), split(k_all), split(v_all), seen)
    return _logits(params, h), new


def _attended(layer: dict[str, Any], h: jax.Array, q: jax.Array, keys: jax.Array, values: jax.Array,
              seen: jax.Array) -> jax.Array:
    """The layer's output: ``h`` plus the attention over the cache's ``keys`` and ``values`` (``(b, heads,
    max_length, head_size)``, where ``seen``) and the MLP."""
    b, s, width = h.shape
    scores = jnp.where(seen, q @ jnp.swapaxes(keys, -1, -2) / np.sqrt(width // GPT_HEADS), -1e9)
    attended = (jax.nn.softmax(scores, axis=-1) @ values).transpose(0, 2, 1, 3).reshape(b, s, width)
    h = h + attended @ layer["proj"]
    out: jax.Array = h + jax.nn.gelu(_layer_norm(h, layer["norm2"]) @ layer["fc"]) @ layer["out"]
    return out


def _logits(params: dict[str, Any], h: jax.Array) -> jax.Array:
    return _layer_norm(h, params["final_norm"]) @ jnp.transpose(params["embed"])


def genai_step(params: dict[str, Any], tokens: jax.Array, mask: jax.Array, cache: list[dict[str, jax.Array]]
               ) -> tuple[jax.Array, list[dict[str, jax.Array]]]:
    """:func:`step` laid out as GenAI's decoders are: ``mask`` is ``int32[b, t]``, 1 for each token
    of the row so far (``t``: the tokens so far, or the whole cache), and the new tokens are written
    after the last slot that any row holds; each position is the count of the row's tokens before it."""
    b, s = tokens.shape
    t = mask.shape[1]
    width, heads = GPT_WIDTH, GPT_HEADS
    max_length = cache[0]["key"].shape[2]
    start = (jnp.max(jnp.where(jnp.any(mask > 0, axis=0), jnp.arange(t) + 1, 0)) - s).astype(jnp.int32)
    slots = start + jnp.arange(s, dtype=jnp.int32)
    columns = jnp.arange(max_length)
    held = jnp.take(mask, jnp.minimum(columns, t - 1), axis=1) * (columns < t)[None, :]
    before = columns[None, None, :] <= slots[None, :, None]
    positions = jnp.maximum(jnp.sum(jnp.where(before, held[:, None, :], 0), axis=-1) - 1, 0)
    seen = (before & (held[:, None, :] > 0))[:, None]
    h = params["embed"][tokens] + params["positions"][positions]
    split = lambda a: a.reshape(b, s, heads, width // heads).transpose(0, 2, 1, 3)  # noqa: E731
    new = []
    for layer, past in zip(params["layers"], cache):
        q, k, v = jnp.split(_layer_norm(h, layer["norm1"]) @ layer["qkv"], 3, axis=-1)
        keys = jax.lax.dynamic_update_slice(past["key"], split(k), (0, 0, start, 0))
        values = jax.lax.dynamic_update_slice(past["value"], split(v), (0, 0, start, 0))
        new.append({"key": keys, "value": values})
        h = _attended(layer, h, split(q), keys, values, seen)
    return _logits(params, h), new


def empty_cache(batch: Any, max_length: int) -> list[dict[str, Any]]:
    """The cache's shapes for ``batch`` rows."""
    leaf = jax.ShapeDtypeStruct((batch, max_length, GPT_WIDTH), jnp.float32)
    return [{"k": leaf, "v": leaf} for _ in range(GPT_LAYERS)]


def save(path: Path, max_length: int) -> Path:
    """The model, exported for any batch and prompt length, saved as a generative bundle at ``path``."""
    b, s = jaxport.symbolic_shape("b, s", constraints=(f"s <= {max_length}",))
    d, = jaxport.symbolic_shape("b")
    weights = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params(max_length))
    ints = lambda *shape: jax.ShapeDtypeStruct(shape, jnp.int32)  # noqa: E731
    fn = jax.jit(step)
    functions = {"prefill": jaxport.export(fn)(weights, ints(b, s), ints(b, s), empty_cache(b, max_length)),
                 "decode": jaxport.export(fn)(weights, ints(d, 1), ints(d, 1), empty_cache(d, max_length))}
    jaxport.save_bundle(path, functions, params(max_length), generation=jaxport.GenerationSpec())
    return path


def save_genai(path: Path, max_length: int) -> Path:
    """:func:`genai_step`, exported for any batch, prompt length and mask length, saved as a generative bundle."""
    b, s, t = jaxport.symbolic_shape("b, s, t", constraints=(f"s <= {max_length}", f"t <= {max_length}"))
    d, u = jaxport.symbolic_shape("b, t", constraints=(f"t <= {max_length}",))
    weights = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params(max_length))
    ints = lambda *shape: jax.ShapeDtypeStruct(shape, jnp.int32)  # noqa: E731
    fn = jax.jit(genai_step)
    functions = {"prefill": jaxport.export(fn)(weights, ints(b, s), ints(b, t), genai_cache(b, max_length)),
                 "decode": jaxport.export(fn)(weights, ints(d, 1), ints(d, u), genai_cache(d, max_length))}
    spec = jaxport.GenerationSpec(prefill_inputs=("tokens", "mask", "cache"), cache_axes=(0, 2))  # type: ignore[arg-type]
    jaxport.save_bundle(path, functions, params(max_length), generation=spec)
    return path


def genai_cache(batch: Any, max_length: int) -> list[dict[str, Any]]:
    """:func:`genai_step`'s cache shapes for ``batch`` rows."""
    leaf = jax.ShapeDtypeStruct((batch, GPT_HEADS, max_length, GPT_WIDTH // GPT_HEADS), jnp.float32)
    return [{"key": leaf, "value": leaf} for _ in range(GPT_LAYERS)]


def jit_loop(max_length: int) -> Any:
    """A hand-written greedy loop of ``jax.jit`` steps, the cache donated: ``loop(prompts, new_tokens)``."""
    weights = jax.tree.map(jnp.asarray, params(max_length))
    jitted = jax.jit(step, donate_argnums=3)

    def loop(prompts: np.ndarray, new_tokens: int) -> list[list[int]]:
        b, s = prompts.shape
        cache = jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), empty_cache(b, max_length))
        logits, cache = jitted(weights, prompts, np.tile(np.arange(s, dtype=np.int32), (b, 1)), cache)
        out = [np.argmax(np.asarray(logits[:, -1]), axis=-1)]
        for i in range(new_tokens - 1):
            positions = np.full((b, 1), s + i, np.int32)
            logits, cache = jitted(weights, out[-1][:, None].astype(np.int32), positions, cache)
            out.append(np.argmax(np.asarray(logits[:, -1]), axis=-1))
        tokens: list[list[int]] = np.stack(out, axis=1).tolist()
        return tokens

    return loop
