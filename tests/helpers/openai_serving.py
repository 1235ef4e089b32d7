"""Generative bundles and the ``openai`` client for the tests of ``jaxport serve``'s OpenAI endpoints.

* :func:`text_bundle`: the positions GPT of :mod:`tests.helpers.gpt_model` with a tokenizer and a chat template;
* :func:`slow_bundle`: the same model, token ids only, with a cache of :data:`LONG` tokens, whose every step
  also multiplies 512 x 512 matrices a few times (adding at most 1e-6 to a logit): a request of
  :data:`LONG_TOKENS` new tokens takes far longer than the tests of the queue, of a client that goes
  away and of SIGTERM need to act while it runs, and they end it themselves (closing its stream, SIGTERM).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
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
#: The slow model's cache length.
LONG = 256
#: As many new tokens as the slow model's cache allows after a one-token prompt: a request that runs
#: until the test ends it (its model never picks EOS).
LONG_TOKENS = LONG - 1


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
    b, s = jaxport.symbolic_shape("b, s", constraints=(f"s <= {LONG}",))
    d, = jaxport.symbolic_shape("b")
    step = jaxport.export(jax.jit(_slow_step))
    steps = {"prefill": step(shapes, jax.ShapeDtypeStruct((b, s), jnp.int32), jax.ShapeDtypeStruct((b, s), jnp.int32),
                             _long_cache(b)),
             "decode": step(shapes, jax.ShapeDtypeStruct((d, 1), jnp.int32), jax.ShapeDtypeStruct((d, 1), jnp.int32),
                            _long_cache(d))}
    jaxport.save_bundle(path, steps, params, generation=gpt.spec(False))
    return path


def _long_cache(batch: Any) -> dict[str, jax.ShapeDtypeStruct]:
    """The slow model's cache shapes: :func:`tests.helpers.gpt_model.empty_cache`'s, :data:`LONG` tokens long."""
    return {name: jax.ShapeDtypeStruct((batch, LONG, *leaf.shape[2:]), leaf.dtype)
            for name, leaf in gpt.empty_cache(batch, shared_index=False).items()}


def wait_for(server: Server, metric: str, value: float, **labels: str) -> None:
    """Polls ``server``'s metric until it reads ``value`` (bounded: 600 reads, 30 s at most).

    Raises:
        AssertionError: it never did.
    """
    deadline = time.monotonic() + 30.0
    for _ in range(600):
        if server.metric(metric, **labels) == value or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert server.metric(metric, **labels) == value, f"{metric}{labels} never read {value}:\n{server.output()}"


def client(server: Server) -> Any:
    """The ``openai`` client of ``server``: no retries, a bounded timeout."""
    import openai

    return openai.OpenAI(base_url=f"http://{server.url}/openai/v1", api_key="unused", max_retries=0, timeout=60.0)


def token_ids(choice: Any) -> list[int]:
    """jaxport's ``token_ids`` extension of a choice."""
    ids: list[int] = choice.model_extra["token_ids"]
    return ids


def post(server: Server, route: str, body: dict[str, Any] | bytes) -> tuple[int, Any]:
    """POSTs ``body`` (JSON, or raw bytes) to ``/openai/v1/{route}``: the status and the JSON answer."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{server.url}/openai/v1/{route}", data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())
