"""The models of the browser module's tests, saved as bundles with golden examples and converted to ONNX.

* ``mlp``: ``predict(params, x)``, ``x: (b, 16) float32``;
* ``gpt``: a GPT-2-like decoder (embeddings, positions, layer norm, causal
  attention, softmax, GELU), ``logits(params, tokens)``, ``tokens: (b, t)
  int32`` with ``t <= 1024``;
* ``kw``: ``mix(params, x, *, scale)`` with ``x: (b, h + 1)``, ``scale:
  {"a": (h,)}``, ``b >= 2`` and dict results: a dimension variable derived
  with an offset, a keyword argument, a constraint, named outputs;
* ``bert`` and ``stats``: the ONNX tests' BERT-like encoder (padding mask,
  ``x[:, 0]`` pooling) and static function with dict outputs, with examples;
* ``dtypes``: two functions without weights, ``step`` on int64 (a page's
  ``BigInt64Array``) with int64 and bool results, ``half`` on float16.

:func:`build` saves each bundle into ``ROOT/bundles/NAME`` and converts it
with ``jaxport.to_onnx(..., web=True)`` into ``ROOT/NAME`` (the ONNX files,
the manifest, the examples and ``jaxport.mjs``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import jaxport

from . import onnx_models as models

MODELS = ("mlp", "gpt", "kw", "bert", "stats", "dtypes")
#: The GPT-2-like model converted with ``quantize="int8-weights"`` too, by :func:`build`.
QUANTIZED = "gpt-int8"
#: The GPT-2-like model's longest sequence (its constraint: ``t <= MAX_T``).
MAX_T = models.MAX_T


def _mlp(path: Path) -> None:
    params = models.mlp_params()
    b, = jaxport.symbolic_shape("b")
    exp = jaxport.export(jax.jit(models.mlp))(models.specs(params), jax.ShapeDtypeStruct((b, 16), jnp.float32))
    x = np.random.default_rng(3).normal(size=(3, 16)).astype(np.float32)
    jaxport.save_bundle(path, {"predict": exp}, params, examples={"predict": [((x,), {}), ((x[:1],), {})]})


def _gpt(path: Path) -> None:
    params = models.transformer_params(1, vocab=97, d=32, layers=2, positions=MAX_T)
    b, t = jaxport.symbolic_shape("b, t", constraints=(f"t <= {MAX_T}",))
    exp = jaxport.export(jax.jit(models.gpt))(models.specs(params), jax.ShapeDtypeStruct((b, t), jnp.int32))
    rng = np.random.default_rng(4)
    examples: list[tuple[tuple[Any, ...], dict[str, Any]]] = [((rng.integers(0, 97, size=shape).astype(np.int32),), {}) for shape in ((1, 8), (2, 5))]
    jaxport.save_bundle(path, {"logits": exp}, params, examples={"logits": examples})


def mix(params: dict[str, Any], x: jax.Array, *, scale: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """``kw``'s function: row sums scaled per column, and a total."""
    rows = x.sum(axis=1, keepdims=True) + params["bias"]
    return {"y": rows * scale["a"][None, :], "total": x.sum()}


def _kw(path: Path) -> None:
    params = {"bias": np.array([0.5], np.float32)}
    b, h = jaxport.symbolic_shape("b, h", constraints=("b >= 2",))
    exp = jaxport.export(jax.jit(mix))(
        models.specs(params), jax.ShapeDtypeStruct((b, h + 1), jnp.float32),
        scale={"a": jax.ShapeDtypeStruct((h,), jnp.float32)})
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 4)).astype(np.float32)
    a = rng.normal(size=(3,)).astype(np.float32)
    jaxport.save_bundle(path, {"mix": exp}, params, examples={"mix": [((x,), {"scale": {"a": a}})]})


def _bert(path: Path) -> None:
    params = models.transformer_params(2, vocab=101, d=32, layers=2, positions=128)
    b, t = jaxport.symbolic_shape("b, t", constraints=("t <= 128",))
    exp = jaxport.export(jax.jit(models.bert))(models.specs(params), jax.ShapeDtypeStruct((b, t), jnp.int32),
                                               jax.ShapeDtypeStruct((b, t), jnp.int32))
    rng = np.random.default_rng(6)
    tokens = rng.integers(0, 101, size=(2, 6)).astype(np.int32)
    mask = np.array([[1] * 6, [1] * 4 + [0] * 2], np.int32)
    jaxport.save_bundle(path, {"encode": exp}, params, examples={"encode": [((tokens, mask), {})]})


def _stats(path: Path) -> None:
    arg = jax.ShapeDtypeStruct((5, 3), jnp.float32)
    exp = jaxport.export(jax.jit(models.stats))(arg, arg)
    rng = np.random.default_rng(7)
    x, y = (rng.normal(size=(5, 3)).astype(np.float32) for _ in range(2))
    jaxport.save_bundle(path, {"stats": exp}, {}, without_params=("stats",), examples={"stats": [((x, y), {})]})


def _dtypes(path: Path) -> None:
    b, = jaxport.symbolic_shape("b")
    with jax.enable_x64(True):
        step = jaxport.export(jax.jit(lambda x: {"next": x * 3 + 1, "big": x > 10}))(
            jax.ShapeDtypeStruct((b,), jnp.int64))
        half = jaxport.export(jax.jit(lambda x: (x * 2).sum(axis=1)))(jax.ShapeDtypeStruct((b, 3), jnp.float16))
        ints = np.array([1, 2, 2**40 + 3], np.int64)
        halves = np.array([[0.5, 1.25, -2.0], [3.0, 0.125, 1.0]], np.float16)
        jaxport.save_bundle(path, {"step": step, "half": half}, {}, without_params=("step", "half"),
                            examples={"step": [((ints,), {})], "half": [((halves,), {})]})


_SAVE = {"dtypes": _dtypes, "mlp": _mlp, "gpt": _gpt, "kw": _kw, "bert": _bert, "stats": _stats}


def main() -> None:
    """``python -m tests.helpers.web_models [--bundles] DIR [NAME...]``: the models (all by default)
    converted into ``DIR``; with ``--bundles``, only their bundles saved into ``DIR/bundles``."""
    import sys

    args = sys.argv[1:]
    only_bundles = args[:1] == ["--bundles"]
    root, names = Path(args[only_bundles]), tuple(args[only_bundles + 1:]) or MODELS
    for name in names:
        save(name, root / "bundles" / name)
    if not only_bundles:
        build(root, names, saved=True)


def save(name: str, bundle: Path) -> None:
    """The bundle of model ``name`` (with its golden examples) at ``bundle``."""
    bundle.parent.mkdir(parents=True, exist_ok=True)
    _SAVE[name](bundle)


def build(root: Path, names: tuple[str, ...] = MODELS, *, saved: bool = False) -> dict[str, Path]:
    """Each model converted (with ``jaxport.mjs``) into ``root/NAME``; their bundles in ``root/bundles``
    (``saved``: already there)."""
    out = {}
    for name in names:
        bundle = root / "bundles" / name
        if not saved:
            save(name, bundle)
        jaxport.to_onnx(bundle, root / name, web=True)
        out[name] = root / name
    if "gpt" in names:  # the tied embedding and the products with int8 weights (issue 39)
        jaxport.to_onnx(root / "bundles" / "gpt", root / QUANTIZED, web=True, quantize="int8-weights")
        out[QUANTIZED] = root / QUANTIZED
    return out


if __name__ == "__main__":
    main()
