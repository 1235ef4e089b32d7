"""Seeds of the fuzz campaign: artifacts to load and call, and flatbuffers to decode.

Artifacts (``target="artifact"``): five kinds (static, symbolic with a
constraint, multi-platform, VJP of order 2, sharded over 8 devices), each
written by both systems. Such a seed keeps the arguments to call it with and
the expected results, so that a mutated artifact that loads can be called and
checked.

Flatbuffers (``target="codec"``), decoded alone by the codec: the 17 blobs of
jax's wheel, records that use every field, and the hand-written ones of
:func:`tests.helpers.artifacts.crafted_blobs` (nesting and sharing bombs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

import jaxport
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.adapters.jax.placement import default_placements
from jaxport.errors import ArtifactError
from tests.helpers.artifacts import crafted_blobs, hlo_record, rich_record, shipped_blobs


@dataclass(frozen=True)
class Seed:
    """One artifact to mutate.

    Attributes:
        name: ``<kind>-<writer>``.
        writer: ``"jaxport"``, ``"jax.export"`` or ``"crafted"`` (by hand).
        target: ``"artifact"`` (loaded with ``jaxport.deserialize`` and
            called) or ``"codec"`` (decoded alone).
        blob: the artifact's bytes.
        module_at: where the main module's bytes lie in ``blob`` (start,
            end); ``(0, 0)`` when it does not decode.
        args: the arguments to call it with (artifacts only).
        expected: the flat results of the call, and of ``grad(sum(call))``
            when the artifact carries a VJP.
        has_vjp: whether ``expected`` ends with the gradient.
    """

    name: str
    writer: str
    target: str
    blob: bytes
    module_at: tuple[int, int]
    args: tuple[np.ndarray, ...] = ()
    expected: tuple[np.ndarray, ...] = ()
    has_vjp: bool = False

    @property
    def family(self) -> str:
        """What the campaign counts the seed's mutations under: the writer of an artifact, or ``codec``."""
        return self.writer if self.target == "artifact" else "codec"


def _f(x: Any) -> Any:
    return jnp.sin(x) * 2.0 + x


def _kinds() -> list[tuple[str, Any, Any, tuple[np.ndarray, ...], int, dict[str, Any]]]:
    """(kind, function, arg spec or 'symbolic', call args, vjp order, export kwargs)."""
    x = np.linspace(-1.0, 1.0, 24, dtype=np.float32).reshape(8, 3)
    mesh = Mesh(np.array(jax.devices()[:8]), ("d",))
    sharded = jax.jit(_f, in_shardings=NamedSharding(mesh, P("d")),
                      out_shardings=NamedSharding(mesh, P("d")))
    spec = jax.ShapeDtypeStruct((8, 3), jnp.float32)
    return [
        ("static", jax.jit(_f), spec, (x,), 0, {}),
        ("symbolic", jax.jit(_f), "symbolic", (x,), 0, {}),
        ("multiplatform", jax.jit(_f), spec, (x,), 0, {"platforms": ("cpu", "cuda")}),
        ("vjp2", jax.jit(_f), spec, (x,), 2, {}),
        ("sharded", sharded, spec, (x,), 0, {}),
    ]


def _spec(spec: Any, writer: str) -> Any:
    if not isinstance(spec, str):
        return spec
    n: Any = (jaxport.symbolic_shape("n", constraints=("n >= 4",)) if writer == "jaxport"
              else jax.export.symbolic_shape("n", constraints=("n >= 4",)))[0]
    return jax.ShapeDtypeStruct((n, 3), jnp.float32)


def build() -> list[Seed]:
    """Every seed: the artifacts, then the flatbuffers."""
    return artifact_seeds() + codec_seeds()


def module_span(blob: bytes) -> tuple[int, int]:
    """Where the main module's bytes lie in ``blob``; ``(0, 0)`` when it does not decode."""
    try:
        module = decode_artifact(blob).mlir_module_serialized
    except ArtifactError:
        return 0, 0
    start = blob.find(module)
    return start, start + len(module)


def codec_seeds() -> list[Seed]:
    """The flatbuffers to decode alone (24 of them)."""
    named = [(f"shipped{i}", "jax.export", blob) for i, blob in enumerate(shipped_blobs())]
    named += [("rich", "jaxport", bytes(encode_artifact(rich_record()))),
              ("hlo", "jaxport", bytes(encode_artifact(hlo_record())))]
    named += [(name, "crafted", blob) for name, blob in crafted_blobs().items()]
    return [Seed(f"{name}-{writer}", writer, "codec", blob, module_span(blob))
            for name, writer, blob in named]


def artifact_seeds() -> list[Seed]:
    """The artifacts to load and call (10 of them)."""
    seeds = []
    for kind, fun, spec, args, vjp_order, kwargs in _kinds():
        for writer in ("jaxport", "jax.export"):
            the_spec = _spec(spec, writer)
            if writer == "jaxport":
                blob = bytes(jaxport.export(fun, **kwargs)(the_spec).serialize(vjp_order))
            else:
                blob = bytes(jax.export.export(fun, **kwargs)(the_spec).serialize(vjp_order))
            loaded = jaxport.deserialize(blob)
            seeds.append(Seed(f"{kind}-{writer}", writer, "artifact", blob, module_span(blob), args,
                              expected_results(loaded, args, vjp_order > 0), vjp_order > 0))
    return seeds


def expected_results(exp: jaxport.Exported, args: tuple[np.ndarray, ...], vjp: bool) -> tuple[np.ndarray, ...]:
    """The flat results of calling ``exp`` (and its gradient, with ``vjp``).

    A module lowered for several devices gets its arguments placed on the
    recorded shardings first, as ``jax.export``'s callers must.
    """
    return results_of(exp.call, placed(exp, args), vjp)


def placed(exp: jaxport.Exported, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` on ``exp``'s recorded shardings when it was lowered for several devices."""
    if exp.nr_devices > 1 and len(exp.in_shardings) == len(args):  # else the call refuses them
        placements = default_placements(exp.in_shardings, exp.fun_name)
        return tuple(a if s is None else jax.device_put(a, s) for a, s in zip(args, placements))
    return args


def results_of(call: Any, args: tuple[Any, ...], vjp: bool) -> tuple[np.ndarray, ...]:
    """The flat results of ``call(*args)`` (and the gradient of their sum, with ``vjp``)."""
    out = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(call(*args))]
    if vjp:
        out.append(np.asarray(jax.grad(lambda *a: jnp.sum(call(*a)))(*args)))
    return tuple(out)


def save(seeds: list[Seed], folder: Path) -> None:
    """Writes the seeds to ``folder`` (blobs, .npy arrays and an index; no pickle)."""
    index = []
    for i, seed in enumerate(seeds):
        (folder / f"{i}.bin").write_bytes(seed.blob)
        for j, a in enumerate(seed.args):
            np.save(folder / f"{i}.arg{j}.npy", a, allow_pickle=False)
        for j, e in enumerate(seed.expected):
            np.save(folder / f"{i}.out{j}.npy", e, allow_pickle=False)
        index.append({"name": seed.name, "writer": seed.writer, "target": seed.target,
                      "module_at": seed.module_at, "args": len(seed.args),
                      "expected": len(seed.expected), "vjp": seed.has_vjp})
    (folder / "index.json").write_text(json.dumps(index))


def load(folder: Path) -> list[Seed]:
    """The seeds :func:`save` wrote."""
    seeds = []
    for i, entry in enumerate(json.loads((folder / "index.json").read_text())):
        args = tuple(np.load(folder / f"{i}.arg{j}.npy", allow_pickle=False) for j in range(entry["args"]))
        expected = tuple(np.load(folder / f"{i}.out{j}.npy", allow_pickle=False)
                         for j in range(entry["expected"]))
        start, end = entry["module_at"]
        seeds.append(Seed(entry["name"], entry["writer"], entry["target"],
                          (folder / f"{i}.bin").read_bytes(), (start, end), args, expected, entry["vjp"]))
    return seeds
