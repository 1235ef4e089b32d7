"""Generative bundles and the ``openai`` client for the tests of ``jaxport serve``'s OpenAI endpoints.

* :func:`text_bundle`: the positions GPT of :mod:`tests.helpers.gpt_model` with a tokenizer and a chat template;
* :func:`slow_bundle`: the same model, token ids only, whose every step also multiplies 512 x 512 matrices a
  few times (adding at most 1e-6 to a logit), so that a request stays in its slot long enough for the
  tests of the queue, of a client that goes away and of SIGTERM to act while it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxport
from tests.helpers import gpt_model as gpt
from tests.helpers.serving import Server

HEAVY = 512
#: How many heavy products each step of the slow model runs.
ROUNDS = 12


def text_bundle(root: Path) -> Path:
    """The positions model with a tokenizer trained in the test and a chat template, at ``root / "gpt"``."""
    tokenizer = gpt.tiny_tokenizer(root / "tokenizer.json")
    return gpt.save(root / "gpt", tokenizer=str(tokenizer), chat_template=gpt.CHAT_TEMPLATE)


def _slow_step(params: dict[str, jax.Array], tokens: jax.Array, positions: jax.Array,
               cache: dict[str, jax.Array]) -> tuple[jax.Array, dict[str, jax.Array]]:
    model = {k: v for k, v in params.items() if k != "heavy"}
    logits, new = gpt._positions_step(model, tokens, positions, cache)  # noqa: SLF001 - the model, made slow
    x = params["heavy"]
    for _ in range(ROUNDS):
        x = jnp.tanh(x @ params["heavy"])
    return logits + 1e-6 * jnp.tanh(jnp.mean(x)), new


def slow_bundle(path: Path) -> Path:
    """The positions model made slow (see the module's docstring), token ids only, at ``path``."""
    params = {**gpt.make_params(), "heavy": jnp.asarray(np.random.default_rng(1).normal(size=(HEAVY, HEAVY))
                                                        / HEAVY, jnp.float32)}
    shapes = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    b, s = jaxport.symbolic_shape("b, s", constraints=(f"s <= {gpt.MAX_LENGTH}",))
    d, = jaxport.symbolic_shape("b")
    step = jaxport.export(jax.jit(_slow_step))
    steps = {"prefill": step(shapes, jax.ShapeDtypeStruct((b, s), jnp.int32), jax.ShapeDtypeStruct((b, s), jnp.int32),
                             gpt.empty_cache(b, shared_index=False)),
             "decode": step(shapes, jax.ShapeDtypeStruct((d, 1), jnp.int32), jax.ShapeDtypeStruct((d, 1), jnp.int32),
                            gpt.empty_cache(d, shared_index=False))}
    jaxport.save_bundle(path, steps, params, generation=gpt.spec(False))
    return path


def client(server: Server) -> Any:
    """The ``openai`` client of ``server``: no retries, a bounded timeout."""
    import openai

    return openai.OpenAI(base_url=f"http://{server.url}/openai/v1", api_key="unused", max_retries=0, timeout=60.0)


def token_ids(choice: Any) -> list[int]:
    """jaxport's ``token_ids`` extension of a choice."""
    ids: list[int] = choice.model_extra["token_ids"]
    return ids
