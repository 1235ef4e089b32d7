"""The functions the benchmarks export and call.

Every factory returns a *fresh* function object on each :meth:`make`, so that
JAX's trace and lowering caches (keyed by the function object) never hit
between benchmark rounds: each round pays for a full trace and lowering, as a
first export of a new function does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import export as jax_export

import jaxport

FEATURES = 16
BATCH = 8
# One layer `tanh(x @ W[i] + b[i])` lowers to 9 StableHLO operations (two
# slices, two reshapes, two broadcast_in_dim, dot_general, add, tanh), plus two
# constants for the whole model: 222 layers give 2,000 and 2,222 give 20,000.
LAYERS_2K = 222
LAYERS_20K = 2222
# With a symbolic batch `b` a layer lowers to 13 operations: the bias is
# broadcast to a shape built at run time (reshape, concatenate,
# dynamic_broadcast_in_dim and their constants); 154 layers give 2,004 and
# 1,538 give 19,996.
LAYERS_POLY_2K = 154
LAYERS_POLY_20K = 1538

Array = jax.Array
Fun = Callable[[Array], Array]
# The two implementations of symbolic shapes that the benchmarks compare.
System = Literal["jaxport", "jax.export"]


@dataclass(frozen=True)
class MlpFactory:
    """Makes ``x -> tanh(x @ W[i] + b[i])`` for ``layers`` layers, fresh each time.

    The weights are closed over (so they become module constants), created
    once per factory and shared by all the functions it makes.
    """

    layers: int
    weights: Array
    biases: Array

    @classmethod
    def with_layers(cls, layers: int, seed: int = 0) -> MlpFactory:
        """A factory with reproducible random weights of scale 0.1."""
        rng = np.random.default_rng(seed)
        w = rng.standard_normal((layers, FEATURES, FEATURES), dtype=np.float32) * 0.1
        b = rng.standard_normal((layers, FEATURES), dtype=np.float32) * 0.1
        return cls(layers, jnp.asarray(w), jnp.asarray(b))

    def make(self) -> Fun:
        """A new function object computing the MLP."""
        layers, weights, biases = self.layers, self.weights, self.biases

        def mlp(x: Array) -> Array:
            for i in range(layers):
                x = jnp.tanh(x @ weights[i] + biases[i])
            return x

        return mlp


@dataclass(frozen=True)
class SinMatmulFactory:
    """Makes the small function ``x -> sin(x) @ W`` (one 16x16 weight)."""

    weight: Array

    @classmethod
    def create(cls, seed: int = 0) -> SinMatmulFactory:
        rng = np.random.default_rng(seed)
        return cls(jnp.asarray(rng.standard_normal((FEATURES, FEATURES), dtype=np.float32)))

    def make(self) -> Fun:
        """A new function object computing ``sin(x) @ W``."""
        weight = self.weight

        def sin_matmul(x: Array) -> Array:
            return jnp.sin(x) @ weight

        return sin_matmul


def input_spec() -> jax.ShapeDtypeStruct:
    """The abstract input of every benchmarked function: f32[8, 16]."""
    return jax.ShapeDtypeStruct((BATCH, FEATURES), jnp.float32)


def input_array(seed: int = 1) -> Array:
    """A concrete input, already on the default device."""
    rng = np.random.default_rng(seed)
    x: Array = jax.device_put(rng.standard_normal((BATCH, FEATURES), dtype=np.float32))
    return x.block_until_ready()


def count_stablehlo_ops(lowered: Any) -> int:
    """The number of ``stablehlo.*`` operations in a ``jax.stages.Lowered``."""
    return count_module_ops(lowered.compiler_ir("stablehlo"))


def count_module_ops(module: Any) -> int:
    """The number of ``stablehlo.*`` operations in an ``ir.Module``."""
    count = 0
    pending: list[Any] = [module.operation]
    while pending:
        op = pending.pop()
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name.startswith("stablehlo."):
                        count += 1
                    pending.append(inner.operation)
    return count


# ---- shape polymorphism -------------------------------------------------------


def symbolic_specs(system: System, shapes: Sequence[str],
                   constraints: Sequence[str] = ()) -> tuple[jax.ShapeDtypeStruct, ...]:
    """One f32 spec per shape spec (``"b, 2*h"``), all in one new scope of ``system``.

    jaxport and ``jax.export`` each parse the same text with their own
    ``symbolic_shape`` and ``SymbolicScope``, so the two exports of one model
    see the same shapes and constraints.
    """
    dims: list[Sequence[Any]]
    if system == "jaxport":
        scope = jaxport.SymbolicScope(tuple(constraints))
        dims = [jaxport.symbolic_shape(s, scope=scope) for s in shapes]
    else:
        jax_scope = jax_export.SymbolicScope(tuple(constraints))
        dims = [jax_export.symbolic_shape(s, scope=jax_scope) for s in shapes]
    return tuple(jax.ShapeDtypeStruct(tuple(shape), jnp.float32) for shape in dims)


def symbolic_batch_spec(system: System) -> jax.ShapeDtypeStruct:
    """The MLP's polymorphic input f32[b, 16], in a new scope of ``system``."""
    (spec,) = symbolic_specs(system, [f"b, {FEATURES}"])
    return spec


@dataclass(frozen=True)
class PolyCallModel:
    """A polymorphic function, its shape specs, and concrete shapes to call it with.

    Attributes:
        name: for the report.
        fun: the function (its body does not matter to the call side's
            abstract evaluation, only its signature).
        shapes: one spec per argument, e.g. ``("b, 2*h", "b, h", "w")``.
        constraints: the scope's constraints.
        concrete: the argument shapes for a batch size ``b`` (called with
            several ``b`` when a benchmark needs new shapes).
    """

    name: str
    fun: Callable[..., Any]
    shapes: tuple[str, ...]
    constraints: tuple[str, ...]
    concrete: Callable[[int], tuple[tuple[int, ...], ...]]

    def specs(self, system: System) -> tuple[jax.ShapeDtypeStruct, ...]:
        """The symbolic argument specs, parsed by ``system``."""
        return symbolic_specs(system, self.shapes, self.constraints)

    def concrete_specs(self, batch: int) -> tuple[jax.ShapeDtypeStruct, ...]:
        """Concrete f32 argument specs for batch size ``batch``."""
        return tuple(jax.ShapeDtypeStruct(s, jnp.float32) for s in self.concrete(batch))


def _three_args(x: Array, y: Array, z: Array) -> tuple[Array, Array, Array]:
    """f32[b, 2*h], f32[b, h], f32[w] -> f32[b, h], f32[2*w], f32[floordiv(w, 2)]."""
    b, h = y.shape
    pairs = x.reshape(b, h, 2).sum(axis=-1)
    return pairs + y, jnp.concatenate([z, z]), z[: z.shape[0] // 2]


def poly_call_models() -> tuple[PolyCallModel, ...]:
    """The call-side models: one variable, and three arguments with constraints."""
    weight = SinMatmulFactory.create().weight

    def sin_matmul(x: Array) -> Array:
        return jnp.sin(x) @ weight

    return (
        PolyCallModel("x[b, 16]", sin_matmul, (f"b, {FEATURES}",), (),
                      lambda b: ((b, FEATURES),)),
        PolyCallModel("x[b, 2*h], y[b, h], z[w]; b >= 2, w >= 4", _three_args,
                      ("b, 2*h", "b, h", "w"), ("b >= 2", "w >= 4"),
                      lambda b: ((b, 32), (b, 16), (10,))),
    )


# ---- runtimes beyond JAX -------------------------------------------------------

#: The transformer block's sizes: sequence length, model width, heads.
BLOCK_SEQ, BLOCK_WIDTH, BLOCK_HEADS = 16, 64, 4


def transformer_params(seed: int = 0) -> dict[str, Any]:
    """The weights of one pre-norm transformer block (NumPy float32, scale 0.1)."""
    rng = np.random.default_rng(seed)
    d = BLOCK_WIDTH

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * 0.1).astype(np.float32)

    return {"ln1": {"scale": np.ones(d, np.float32), "bias": np.zeros(d, np.float32)},
            "attn": {"qkv": w(d, 3 * d), "out": w(d, d)},
            "ln2": {"scale": np.ones(d, np.float32), "bias": np.zeros(d, np.float32)},
            "mlp": {"w1": w(d, 4 * d), "b1": np.zeros(4 * d, np.float32), "w2": w(4 * d, d),
                    "b2": np.zeros(d, np.float32)}}


def _layer_norm(x: Array, p: dict[str, Array]) -> Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["scale"] + p["bias"]


def transformer_block(params: dict[str, Any], x: Array) -> Array:
    """x: f32[b, BLOCK_SEQ, BLOCK_WIDTH] -> the same: causal self-attention, layer norm, a GELU MLP."""
    b, t, d = x.shape
    heads, head = BLOCK_HEADS, BLOCK_WIDTH // BLOCK_HEADS
    h = _layer_norm(x, params["ln1"])
    q, k, v = jnp.split(h @ params["attn"]["qkv"], 3, axis=-1)
    q, k, v = (a.reshape(b, t, heads, head).transpose(0, 2, 1, 3) for a in (q, k, v))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head).astype(np.float32)
    scores = jnp.where(jnp.tril(jnp.ones((t, t), bool)), scores, -1e9)
    attended = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(b, t, d)
    x = x + attended @ params["attn"]["out"]
    h = _layer_norm(x, params["ln2"])
    mlp = params["mlp"]
    out: Array = x + jax.nn.gelu(h @ mlp["w1"] + mlp["b1"]) @ mlp["w2"] + mlp["b2"]
    return out


def transformer_input(batch: int, seed: int = 1) -> np.ndarray:
    """A concrete input of the block for ``batch`` sequences (host memory)."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((batch, BLOCK_SEQ, BLOCK_WIDTH), dtype=np.float32)


# A GPT-2-small-sized transformer written with jax.numpy (random weights): 6 layers of width
# 512 with 8 heads, a vocabulary of 8,192 and 128 positions; about 23 million parameters
# (93 MB of float32), the logits from the embedding (tied, as GPT-2's).
GPT_LAYERS, GPT_WIDTH, GPT_HEADS, GPT_VOCAB, GPT_POSITIONS = 6, 512, 8, 8192, 128
#: The token ids the benchmarks give it: int32[b, GPT_TOKENS].
GPT_TOKENS = 64


def gpt_params(seed: int = 0) -> dict[str, Any]:
    """The transformer's weights: ``embed``, ``positions``, ``layers`` (a list) and ``final_norm``."""
    rng = np.random.default_rng(seed)
    w = GPT_WIDTH

    def normal(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)

    def norm() -> dict[str, np.ndarray]:
        return {"scale": np.ones(w, np.float32), "bias": np.zeros(w, np.float32)}

    layers = [{"norm1": norm(), "qkv": normal(w, 3 * w), "proj": normal(w, w), "norm2": norm(),
               "fc": normal(w, 4 * w), "out": normal(4 * w, w)} for _ in range(GPT_LAYERS)]
    return {"embed": normal(GPT_VOCAB, w), "positions": normal(GPT_POSITIONS, w), "layers": layers,
            "final_norm": norm()}


def gpt(params: dict[str, Any], ids: Array) -> Array:
    """The logits ``f32[b, t, vocab]`` of token ids ``int32[b, t]`` (causal self-attention)."""
    b, t = ids.shape
    heads, width = GPT_HEADS, GPT_WIDTH
    h = params["embed"][ids] + params["positions"][:t]
    causal = jnp.tril(jnp.ones((t, t), bool))
    for layer in params["layers"]:
        q, k, v = jnp.split(_layer_norm(h, layer["norm1"]) @ layer["qkv"], 3, axis=-1)
        q, k, v = (jnp.reshape(a, (b, t, heads, width // heads)).transpose(0, 2, 1, 3) for a in (q, k, v))
        scores = jnp.where(causal, q @ jnp.swapaxes(k, -1, -2) / np.sqrt(width // heads), -1e9)
        attended = (jax.nn.softmax(scores, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(b, t, width)
        h = h + attended @ layer["proj"]
        h = h + jax.nn.gelu(_layer_norm(h, layer["norm2"]) @ layer["fc"]) @ layer["out"]
    logits: Array = _layer_norm(h, params["final_norm"]) @ jnp.transpose(params["embed"])
    return logits
