"""The models of the ONNX tests: an MLP, a GPT-2-like decoder, a BERT-like encoder, a static dict function.

Each ``save_*`` writes a bundle (the weights in ``params.safetensors``, the
functions exported with symbolic dimensions) or an artifact, and returns
its path with the plain function to compare against under ``jax.jit``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxport

MAX_T = 1024


def specs(tree: Any) -> Any:
    """The ShapeDtypeStructs of a pytree of arrays."""
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), tree)


def _normal(rng: np.random.Generator, *shape: int, scale: float = 0.2) -> np.ndarray:
    return (rng.normal(size=shape) * scale).astype(np.float32)


def mlp_params(seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    sizes = [16, 32, 32, 5]
    return {f"layer{i}": {"w": _normal(rng, m, n), "b": _normal(rng, n)}
            for i, (m, n) in enumerate(zip(sizes, sizes[1:]))}


def mlp(params: dict[str, Any], x: jax.Array) -> jax.Array:
    for i in range(3):
        x = x @ params[f"layer{i}"]["w"] + params[f"layer{i}"]["b"]
        x = jax.nn.relu(x) if i < 2 else jax.nn.log_softmax(x)
    return x


def mlp_loss(params: dict[str, Any], x: jax.Array, labels: jax.Array) -> jax.Array:
    """The mean cross-entropy of :func:`mlp` for integer labels."""
    return -(jax.nn.one_hot(labels, 5) * mlp(params, x)).sum(-1).mean()


def _layer_norm(x: jax.Array, p: dict[str, Any]) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["g"] + p["b"]


def _attention(x: jax.Array, p: dict[str, Any], heads: int, mask: jax.Array) -> Any:
    b, t, d = x.shape
    qkv = x @ p["qkv"] + p["qkv_b"]
    q, k, v = (a.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3) for a in jnp.split(qkv, 3, axis=-1))
    scores = jnp.einsum("bhtd,bhsd->bhts", q, k) / np.sqrt(d // heads).astype(np.float32)
    scores = jnp.where(mask, scores, -1e9)
    out = jax.nn.softmax(scores, axis=-1) @ v
    return out.transpose(0, 2, 1, 3).reshape(b, t, d) @ p["proj"]


def transformer_params(seed: int, vocab: int, d: int, layers: int, positions: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    ln = lambda: {"g": 1 + _normal(rng, d, scale=0.05), "b": _normal(rng, d, scale=0.05)}  # noqa: E731
    return {
        "wte": _normal(rng, vocab, d), "wpe": _normal(rng, positions, d), "ln_f": ln(),
        "blocks": [{"ln1": ln(), "ln2": ln(), "attn": {"qkv": _normal(rng, d, 3 * d), "qkv_b": _normal(rng, 3 * d),
                                                      "proj": _normal(rng, d, d)},
                    "fc": _normal(rng, d, 4 * d), "fc_b": _normal(rng, 4 * d), "out": _normal(rng, 4 * d, d)}
                   for _ in range(layers)],
    }


def gpt(params: dict[str, Any], tokens: jax.Array) -> Any:
    """A GPT-2-like decoder: embeddings, positions, pre-norm blocks, causal attention, tanh GELU, tied logits."""
    t = tokens.shape[1]
    x = params["wte"][tokens] + params["wpe"][:t]
    causal = jnp.tril(jnp.ones((t, t), bool))
    for block in params["blocks"]:
        x = x + _attention(_layer_norm(x, block["ln1"]), block["attn"], 4, causal)
        h = jax.nn.gelu(_layer_norm(x, block["ln2"]) @ block["fc"] + block["fc_b"], approximate=True)
        x = x + h @ block["out"]
    return _layer_norm(x, params["ln_f"]) @ params["wte"].T


def bert(params: dict[str, Any], tokens: jax.Array, mask: jax.Array) -> dict[str, jax.Array]:
    """A BERT-like encoder: padding mask, post-norm blocks, erf GELU, ``x[:, 0]`` pooling."""
    t = tokens.shape[1]
    x = _layer_norm(jnp.take(params["wte"], tokens, axis=0) + params["wpe"][:t], params["ln_f"])
    keep = mask[:, None, None, :] > 0
    for block in params["blocks"]:
        x = _layer_norm(x + _attention(x, block["attn"], 4, keep), block["ln1"])
        h = jax.nn.gelu(x @ block["fc"] + block["fc_b"], approximate=False)
        x = _layer_norm(x + h @ block["out"], block["ln2"])
    pooled = jnp.tanh(x[:, 0] @ params["blocks"][0]["attn"]["proj"])
    return {"pooled": pooled, "sequence": x}


def stats(x: jax.Array, y: jax.Array) -> dict[str, Any]:
    """A static function with dict outputs."""
    return {"sum": x + y, "gram": x @ y.T, "extremes": {"max": x.max(axis=0), "min": y.min(axis=1)},
            "count": (x > y).sum().astype(jnp.int32)}


def save_mlp(path: Path) -> tuple[Path, dict[str, Any]]:
    params = mlp_params()
    b, = jaxport.symbolic_shape("b")
    x = jax.ShapeDtypeStruct((b, 16), jnp.float32)
    exp = jaxport.export(jax.jit(mlp))(specs(params), x)
    loss = jaxport.export(jax.jit(mlp_loss))(specs(params), x, jax.ShapeDtypeStruct((b,), jnp.int32))
    jaxport.save_bundle(path, {"predict": exp, "loss": loss}, params)
    return path, params


def save_gpt(path: Path) -> tuple[Path, dict[str, Any]]:
    params = transformer_params(1, vocab=97, d=32, layers=2, positions=MAX_T)
    b, t = jaxport.symbolic_shape("b, t", constraints=(f"t <= {MAX_T}",))
    exp = jaxport.export(jax.jit(gpt))(specs(params), jax.ShapeDtypeStruct((b, t), jnp.int32))
    jaxport.save_bundle(path, {"logits": exp}, params)
    return path, params


def save_bert(path: Path) -> tuple[Path, dict[str, Any]]:
    params = transformer_params(2, vocab=101, d=32, layers=2, positions=128)
    b, t = jaxport.symbolic_shape("b, t", constraints=("t <= 128",))
    exp = jaxport.export(jax.jit(bert))(specs(params), jax.ShapeDtypeStruct((b, t), jnp.int32),
                                        jax.ShapeDtypeStruct((b, t), jnp.int32))
    jaxport.save_bundle(path, {"encode": exp}, params)
    return path, params


def save_stats(path: Path) -> Path:
    arg = jax.ShapeDtypeStruct((5, 3), jnp.float32)
    jaxport.save(jaxport.export(jax.jit(stats))(arg, arg), path)
    return path
