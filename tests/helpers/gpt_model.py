"""Two small GPTs for the generation tests, each next token a table lookup with a clear margin.

Both attend over a key/value cache, like a GPT, but the attention adds at
most 0.1 to a logit, while the token that the table picks gets 10: no test
depends on the CPU's kernels breaking a near-tie. The table's pick depends on
the row's whole history through the cache (the sum of the tokens it holds),
on the token and on its position, so a wrong position, a lost cache or a
row's cache mixed with another's changes the tokens.

* :func:`positions_model`: ``(tokens, positions, cache)``, per-row positions,
  every cache leaf with a batch axis (rows written at their own positions).
* :func:`mask_model`: ``(tokens, mask, cache)``, a cache whose write index is
  shared by the batch (as transformers' Flax GPT-2's is), a mask over its slots.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxport

VOCAB = 32
WIDTH = 16
MAX_LENGTH = 16
EOS = 31


def make_params(seed: int = 0, width: int = WIDTH) -> dict[str, jax.Array]:
    """The weights: an embedding, the attention's projections, the output projection (``width`` wide)."""
    rng = np.random.default_rng(seed)
    shapes = {"embed": (VOCAB, width), "wq": (width, width), "wk": (width, width), "wv": (width, width),
              "wo": (width, VOCAB)}
    return {name: jnp.asarray(rng.normal(size=shape) / np.sqrt(shape[0]), jnp.float32)
            for name, shape in shapes.items()}


def _logits(params: dict[str, jax.Array], tokens: jax.Array, positions: jax.Array, k: jax.Array, v: jax.Array,
            held: jax.Array, visible: jax.Array) -> jax.Array:
    """(b, s, vocab): 10 at the table's pick, plus at most 0.1 from the attention.

    ``visible[b, i, j]``: whether token ``i`` of row ``b`` sees cache slot ``j``.
    """
    x = params["embed"][tokens]
    q = x @ params["wq"]
    scores = jnp.einsum("bsd,btd->bst", q, k) / np.sqrt(k.shape[-1])
    scores = jnp.where(visible, scores, -1e9)
    attended = jnp.einsum("bst,btd->bsd", jax.nn.softmax(scores, axis=-1), v)
    history = jnp.sum(jnp.where(visible, held[:, None, :], 0), axis=-1)
    pick = (5 * tokens + 3 * positions + history + 1) % (VOCAB - 1)  # never EOS: tests stop with `stop`
    return 10.0 * jax.nn.one_hot(pick, VOCAB) + 0.1 * jnp.tanh(attended @ params["wo"])


def _positions_step(params: dict[str, jax.Array], tokens: jax.Array, positions: jax.Array,
                    cache: dict[str, jax.Array]) -> tuple[jax.Array, dict[str, jax.Array]]:
    x = params["embed"][tokens]
    rows = jnp.arange(tokens.shape[0])[:, None]
    k = cache["k"].at[rows, positions].set(x @ params["wk"])
    v = cache["v"].at[rows, positions].set(x @ params["wv"])
    held = cache["tok"].at[rows, positions].set(tokens)
    visible = jnp.arange(k.shape[1])[None, None, :] <= positions[:, :, None]  # the cache's length
    new = {"k": k, "v": v, "tok": held}
    if "ballast" in cache:  # a large leaf that each step updates in one place (the donation tests)
        new["ballast"] = cache["ballast"].at[rows, positions, 0].set(1.0)
    return _logits(params, tokens, positions, k, v, held, visible), new


def _mask_step(params: dict[str, jax.Array], tokens: jax.Array, mask: jax.Array, cache: dict[str, jax.Array]
               ) -> tuple[jax.Array, dict[str, jax.Array]]:
    x = params["embed"][tokens]
    start = cache["index"]
    k = jax.lax.dynamic_update_slice(cache["k"], x @ params["wk"], (0, start, 0))
    v = jax.lax.dynamic_update_slice(cache["v"], x @ params["wv"], (0, start, 0))
    held = jax.lax.dynamic_update_slice(cache["tok"], tokens, (0, start))
    slots = start + jnp.arange(tokens.shape[1])
    positions = jnp.take(jnp.cumsum(mask, axis=1) - 1, slots, axis=1).astype(tokens.dtype)
    visible = (jnp.arange(MAX_LENGTH)[None, None, :] <= slots[None, :, None]) & (mask[:, None, :] > 0)
    new = {"index": start + tokens.shape[1], "k": k, "v": v, "tok": held}
    return _logits(params, tokens, positions, k, v, held, visible), new


def empty_cache(batch: Any, *, shared_index: bool, ballast: int = 0, width: int = WIDTH) -> dict[str, Any]:
    """The cache's shapes (``ShapeDtypeStruct``\\ s) for ``batch`` rows (an int or a symbolic dimension);
    with ``ballast``, one more leaf of ``ballast`` floats per slot (the positions model only)."""
    cache = {"k": jax.ShapeDtypeStruct((batch, MAX_LENGTH, width), jnp.float32),
             "v": jax.ShapeDtypeStruct((batch, MAX_LENGTH, width), jnp.float32),
             "tok": jax.ShapeDtypeStruct((batch, MAX_LENGTH), jnp.int32)}
    if shared_index:
        cache["index"] = jax.ShapeDtypeStruct((), jnp.int32)
    if ballast:
        cache["ballast"] = jax.ShapeDtypeStruct((batch, MAX_LENGTH, ballast), jnp.float32)
    return cache


def export_steps(shared_index: bool, ballast: int = 0, width: int = WIDTH) -> dict[str, jaxport.Exported]:
    """The prefill and the decode, exported for any batch and prompt length."""
    b, s = jaxport.symbolic_shape("b, s", constraints=(f"s <= {MAX_LENGTH}",))
    params = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), make_params(width=width))
    d, = jaxport.symbolic_shape("b")  # the decode's scope: no prompt length
    fn = jax.jit(_mask_step if shared_index else _positions_step)
    second = jax.ShapeDtypeStruct((b, MAX_LENGTH) if shared_index else (b, s), jnp.int32)
    one = jax.ShapeDtypeStruct((d, MAX_LENGTH) if shared_index else (d, 1), jnp.int32)
    return {"prefill": jaxport.export(fn)(params, jax.ShapeDtypeStruct((b, s), jnp.int32), second,
                                          empty_cache(b, shared_index=shared_index, ballast=ballast, width=width)),
            "decode": jaxport.export(fn)(params, jax.ShapeDtypeStruct((d, 1), jnp.int32), one,
                                         empty_cache(d, shared_index=shared_index, ballast=ballast, width=width))}


def spec(shared_index: bool, **kw: Any) -> jaxport.GenerationSpec:
    """The generation spec of either model."""
    if shared_index:
        return jaxport.GenerationSpec(prefill_inputs=("tokens", "mask", "cache"),  # type: ignore[arg-type]
                                      cache_axes={"index": (None, None), "k": (0, 1), "v": (0, 1), "tok": (0, 1)},
                                      eos_ids=(EOS,), **kw)
    return jaxport.GenerationSpec(eos_ids=(EOS,), **kw)


def save(path: Path, shared_index: bool = False, ballast: int = 0, width: int = WIDTH, **kw: Any) -> Path:
    """Saves either model as a generative bundle at ``path`` (``width``: of its weights and cache)."""
    jaxport.save_bundle(path, export_steps(shared_index, ballast, width), make_params(width=width),
                        generation=spec(shared_index, **kw))
    return path


def reference(shared_index: bool, prompt: list[int], max_new_tokens: int, width: int = WIDTH) -> list[int]:
    """Greedy tokens of a plain ``jax.jit`` loop of the original functions (one prompt, no stop)."""
    params = make_params(width=width)
    step: Callable[..., Any] = jax.jit(_mask_step if shared_index else _positions_step)
    cache = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), empty_cache(1, shared_index=shared_index, width=width))
    n = len(prompt)
    tokens = jnp.asarray([prompt], jnp.int32)
    if shared_index:
        second = jnp.asarray([[1] * n + [0] * (MAX_LENGTH - n)], jnp.int32)
    else:
        second = jnp.arange(n, dtype=jnp.int32)[None]
    logits, cache = step(params, tokens, second, cache)
    out = [int(jnp.argmax(logits[0, -1]))]
    for i in range(max_new_tokens - 1):
        if shared_index:
            second = jnp.asarray([[1] * (n + i + 1) + [0] * (MAX_LENGTH - n - i - 1)], jnp.int32)
        else:
            second = jnp.asarray([[n + i]], jnp.int32)
        logits, cache = step(params, jnp.asarray([[out[-1]]], jnp.int32), second, cache)
        out.append(int(jnp.argmax(logits[0, -1])))
    return out


def tiny_tokenizer(path: Path) -> Path:
    """A BPE tokenizer of exactly :data:`VOCAB` tokens, trained in memory, saved as ``tokenizer.json`` at ``path``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.decoder = decoders.BPEDecoder()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, show_progress=False, end_of_word_suffix="</w>")
    tokenizer.train_from_iterator(["the cat sat on the mat and the dog sat on the log by the bog"] * 10, trainer)
    assert tokenizer.get_vocab_size() == VOCAB
    tokenizer.save(str(path))
    return path


#: A chat template as ``tokenizer_config.json`` holds one; it refuses a conversation that does not start with the user.
CHAT_TEMPLATE = ("{% if messages[0]['role'] != 'user' %}{{ raise_exception('the first message is not the user\\'s') }}"
                 "{% endif %}{% for m in messages %}{{ m['content'] }} {% endfor %}"
                 "{% if add_generation_prompt %}the{% endif %}")


_CHILD = """
import json, sys
import jaxport
generator = jaxport.load_generator(sys.argv[1])
print(type(generator._runner).__name__)
print(json.dumps(generator.generate(json.loads(sys.argv[2]), int(sys.argv[3]))))
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("jax", "jaxlib"))))
"""


def generate_in_child(path: Path, prompts: list[list[int]], max_new_tokens: int) -> tuple[str, list[list[int]], list[str]]:
    """Greedy tokens of ``load_generator(path)`` in a fresh process: its runner's class name, the tokens,
    and the JAX modules the process imported."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), json.dumps(prompts), str(max_new_tokens)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    runner, tokens, loaded = out.stdout.strip().splitlines()[-3:]
    return runner, json.loads(tokens), json.loads(loaded)
