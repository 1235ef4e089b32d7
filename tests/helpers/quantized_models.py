"""The model of the quantization tests: a small GPT-like decoder whose embedding is tied, and the
round-to-nearest baselines the issue measures against, computed here with NumPy.

Error = largest absolute difference to the float32 model's output over the output's largest magnitude.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from tests.helpers.onnx_models import gpt, specs

VOCAB, WIDTH, LAYERS, POSITIONS = 256, 128, 2, 16


def params(seed: int = 1) -> dict[str, Any]:
    """GPT-2-like weights (normal, 0.02), small enough for a test and large enough that the weights
    are most of the directory."""
    rng = np.random.default_rng(seed)
    d = WIDTH

    def n(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.normal(size=shape) * scale).astype(np.float32)

    def ln() -> dict[str, np.ndarray]:
        return {"g": 1 + n(d, scale=0.05), "b": n(d, scale=0.05)}

    return {"wte": n(VOCAB, d), "wpe": n(POSITIONS, d), "ln_f": ln(),
            "blocks": [{"ln1": ln(), "ln2": ln(), "attn": {"qkv": n(d, 3 * d), "qkv_b": n(3 * d), "proj": n(d, d)},
                        "fc": n(d, 4 * d), "fc_b": n(4 * d), "out": n(4 * d, d)} for _ in range(LAYERS)]}


@pytest.fixture(scope="module")
def weights() -> dict[str, Any]:
    """The model's weights (a fixture of the modules that import it)."""
    return params()


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, weights: dict[str, Any]) -> Path:
    """The model's bundle, with one golden example (a fixture of the modules that import it)."""
    return save(tmp_path_factory.mktemp("quantize") / "gpt", weights)


def tokens(batch: int = 1, length: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, VOCAB, (batch, length)).astype(np.int32)


def save(path: Path, weights: dict[str, Any], *, examples: bool = True) -> Path:
    """The bundle: ``logits`` of symbolic batch and length, one golden example (or none)."""
    b, t = jaxport.symbolic_shape("b, t", constraints=(f"t <= {POSITIONS}",))
    exp = jaxport.export(jax.jit(gpt))(specs(weights), jax.ShapeDtypeStruct((b, t), jnp.int32))
    jaxport.save_bundle(path, {"logits": exp}, weights,
                        examples={"logits": [((tokens(),), {})]} if examples else None)
    return path


def logits(weights: dict[str, Any], ids: np.ndarray) -> np.ndarray:
    return np.asarray(jax.jit(gpt)(weights, ids))


def error(got: np.ndarray, want: np.ndarray) -> float:
    """The issue's error: largest absolute difference over the output's largest magnitude."""
    return float(np.abs(got - want).max() / np.abs(want).max())


def rtn_int8(w: np.ndarray, axis: int) -> np.ndarray:
    """``w`` rounded to nearest int8 with one scale per index of ``axis`` (the output channels), dequantized."""
    scale = np.abs(w).max(axis=1 - axis, keepdims=True) / 127
    return (np.clip(np.rint(w / scale), -127, 127) * scale).astype(np.float32)


def rtn_int4(w: np.ndarray, axis: int, block: int = 32) -> np.ndarray:
    """``w`` rounded to nearest int4 in blocks of ``block`` along ``axis`` (the reduction), dequantized."""
    moved = np.moveaxis(w, axis, 1)
    blocks = moved.reshape(moved.shape[0], -1, block)
    scale = np.abs(blocks).max(axis=2, keepdims=True) / 7
    rounded = (np.clip(np.rint(blocks / scale), -8, 7) * scale).reshape(moved.shape)
    return np.moveaxis(rounded, 1, axis).astype(np.float32)


def rounded(weights: dict[str, Any], rtn: Callable[[np.ndarray, bool], np.ndarray]) -> dict[str, Any]:
    """The weights with every matrix of a product (and the tied embedding) rounded by ``rtn(w, tied)``."""
    out: dict[str, Any] = jax.tree.map(lambda w: w, weights)
    out["wte"] = rtn(weights["wte"], True)
    for block, source in zip(out["blocks"], weights["blocks"]):
        block["fc"], block["out"] = rtn(source["fc"], False), rtn(source["out"], False)
        block["attn"] = {**source["attn"], "qkv": rtn(source["attn"]["qkv"], False),
                         "proj": rtn(source["attn"]["proj"], False)}
    return out


def rtn_errors(weights: dict[str, Any], ids: np.ndarray) -> tuple[float, float]:
    """The errors of round-to-nearest int8 (per output channel) and int4 (blocks of 32) weights."""
    want = logits(weights, ids)
    int8 = rounded(weights, lambda w, tied: rtn_int8(w, 0 if tied else 1))
    int4 = rounded(weights, lambda w, tied: rtn_int4(w, 1 if tied else 0))
    return error(logits(int8, ids), want), error(logits(int4, ids), want)


#: The MLP's widths: input, two hidden layers, output (multiples of int4's blocks of 32).
MLP_SIZES = (64, 128, 128, 32)


def mlp_params(seed: int = 2) -> dict[str, Any]:
    """An MLP's weights (normal, scaled by the fan-in's root)."""
    rng = np.random.default_rng(seed)
    return {f"layer{i}": {"w": (rng.normal(size=(m, n)) / np.sqrt(m)).astype(np.float32),
                          "b": (rng.normal(size=n) * 0.1).astype(np.float32)}
            for i, (m, n) in enumerate(zip(MLP_SIZES, MLP_SIZES[1:]))}


def mlp(params: dict[str, Any], x: jax.Array) -> jax.Array:
    """Three dense layers, GELU between them."""
    for i in range(len(MLP_SIZES) - 1):
        x = x @ params[f"layer{i}"]["w"] + params[f"layer{i}"]["b"]
        x = jax.nn.gelu(x) if i < len(MLP_SIZES) - 2 else x
    return x


def mlp_out(params: dict[str, Any], x: np.ndarray) -> np.ndarray:
    return np.asarray(jax.jit(mlp)(params, x))


def save_mlp(path: Path, params: dict[str, Any]) -> Path:
    """The MLP's bundle: ``predict`` of symbolic batch, one golden example."""
    b, = jaxport.symbolic_shape("b")
    exp = jaxport.export(jax.jit(mlp))(specs(params), jax.ShapeDtypeStruct((b, MLP_SIZES[0]), jnp.float32))
    x = np.random.default_rng(0).normal(size=(4, MLP_SIZES[0])).astype(np.float32)
    jaxport.save_bundle(path, {"predict": exp}, params, examples={"predict": [((x,), {})]})
    return path


def directory_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
