"""jaxport on a TPU: artifacts exported on a CPU-only machine, called on a TPU host, and back.

Three steps, each a subcommand reading or writing a directory, so that the two
machines share only files:

1. ``python tools/tpu_check.py export DIR --consumer jax==0.10.2`` on a machine
   with jaxport and JAX (no TPU needed): exports, for ``("cpu", "tpu")``, an
   MLP with a symbolic batch, a ``lax.platform_dependent`` function, a
   ``jnp.linalg.eigvalsh`` (a TPU custom call there), a bfloat16 transformer
   block saved as a bundle, and, for ``("tpu",)``, a Pallas kernel (Pallas
   lowers for the CPU only in interpret mode); each written for the TPU host's
   JAX (``consumer=``), with its inputs and the expected outputs (for a consumer
   older than this JAX, the kernel's Mosaic module is MLIR text: an older MLIR
   does not read this one's bytecode). An informative variant of the Pallas
   kernel (rows marked ``info``, never failures): ``pallas_newest``, as this JAX
   writes it (no ``consumer=``), which ``check --consumer`` refuses.
2. ``python tools/tpu_check.py call DIR --back BACK`` on the TPU host: calls
   each artifact with jaxport and with ``jax.export``, compares both with the
   expected outputs and with each other, times the eager call of each against
   ``jax.jit`` of the original function (defined here, so the host rebuilds
   it), then exports the MLP there (for ``("tpu", "cpu")``, with its VJP) into
   BACK with its inputs and outputs.
3. ``python tools/tpu_check.py back BACK`` on the first machine: calls and
   differentiates what the TPU exported, with jaxport and ``jax.export``.

Each step prints a table (one row per check) and exits 1 if a check failed,
2 on a usage error. Python 3.11 or newer; JAX 0.10.2 or newer; jaxport
importable (``PYTHONPATH=build/importroot`` from a clone).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import export as jax_export
from jax import lax

import jaxport

MANIFEST = "cases.json"


# ---- the functions (both machines build them from here) ----------------------------------------

def _weights(shape: tuple[int, ...], seed: float) -> np.ndarray:
    size = int(np.prod(shape))
    return (np.cos(np.arange(size, dtype=np.float32) * seed) / np.sqrt(shape[0])).reshape(shape)


MLP_PARAMS = {"w1": _weights((16, 64), 0.37), "b1": _weights((64,), 0.11),
              "w2": _weights((64, 8), 1.37), "b2": _weights((8,), 0.23)}


def mlp(x: Any) -> Any:
    """A two-layer MLP with its weights closed over (constants of the module)."""
    h = jnp.tanh(x @ MLP_PARAMS["w1"] + MLP_PARAMS["b1"])
    return h @ MLP_PARAMS["w2"] + MLP_PARAMS["b2"]


def per_platform(x: Any) -> Any:
    """``x + 1`` on a CPU, ``x + 2`` on a TPU: the TPU must take its own branch."""
    return lax.platform_dependent(x, cpu=lambda v: v + 1.0, tpu=lambda v: v + 2.0, default=lambda v: v + 3.0)


def eigenvalues(a: Any) -> Any:
    """``eigvalsh``: LAPACK on a CPU, the TPU's ``Eigh`` custom call on a TPU."""
    return jnp.linalg.eigvalsh(a)


def _pallas_kernel(x_ref: Any, y_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...] * 2.0 + y_ref[...]


def pallas_axpy(x: Any, y: Any) -> Any:
    """``2x + y`` by a Pallas TPU kernel (Mosaic)."""
    from jax.experimental import pallas as pl  # only this case needs Pallas

    return pl.pallas_call(_pallas_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)


D_MODEL, HEADS, SEQ = 128, 4, 64


def block_params() -> dict[str, np.ndarray]:
    """The transformer block's weights (float32 here; the block runs in bfloat16)."""
    d = D_MODEL
    return {"wq": _weights((d, d), 0.1), "wk": _weights((d, d), 0.2), "wv": _weights((d, d), 0.3),
            "wo": _weights((d, d), 0.4), "w1": _weights((d, 4 * d), 0.5), "w2": _weights((4 * d, d), 0.6),
            "g1": np.ones((d,), np.float32), "g2": np.ones((d,), np.float32)}


def block(params: dict[str, Any], x: Any) -> Any:
    """A pre-norm transformer block (causal attention, GELU MLP) in bfloat16."""
    def norm(v: Any, g: Any) -> Any:
        v32 = v.astype(jnp.float32)
        out = v32 * lax.rsqrt(jnp.mean(v32 * v32, axis=-1, keepdims=True) + 1e-6)
        return (out * g.astype(jnp.float32)).astype(jnp.bfloat16)

    p = {k: v.astype(jnp.bfloat16) for k, v in params.items()}
    x = x.astype(jnp.bfloat16)
    b, s, d = x.shape
    h = norm(x, p["g1"])
    q, k, v = (jnp.reshape(h @ p[w], (b, s, HEADS, d // HEADS)) for w in ("wq", "wk", "wv"))
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(jnp.float32) / np.sqrt(d // HEADS)
    scores = jnp.where(jnp.tril(jnp.ones((s, s), bool)), scores, -1e9)
    attn = jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1).astype(jnp.bfloat16), v)
    x = x + jnp.reshape(attn, (b, s, d)) @ p["wo"]
    return x + jax.nn.gelu(norm(x, p["g2"]) @ p["w1"]) @ p["w2"]


@dataclass(frozen=True)
class Case:
    """One function to export: its name, the function, its specs, platforms and tolerances."""

    name: str
    fun: Callable[..., Any]
    specs: Callable[[], Sequence[Any]]
    inputs: Callable[[], Sequence[np.ndarray]]
    platforms: tuple[str, ...] = ("cpu", "tpu")
    # On a TPU, float32 matmuls run at bfloat16 passes by default: the tolerance covers that.
    rtol: float = 2e-2
    atol: float = 2e-2
    expected: Callable[..., Any] | None = None  # what the TPU computes, when the CPU computes otherwise


def _rng_inputs(*shapes: tuple[int, ...]) -> Callable[[], list[np.ndarray]]:
    def make() -> list[np.ndarray]:
        rng = np.random.default_rng(0)
        return [rng.standard_normal(s).astype(np.float32) for s in shapes]
    return make


def _symmetric() -> list[np.ndarray]:
    a = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    return [(a + a.T) / 2]


def cases() -> list[Case]:
    """The functions of the check, in order."""
    b, = jaxport.symbolic_shape("b")
    return [
        Case("mlp", mlp, lambda: [jax.ShapeDtypeStruct((b, 16), jnp.float32)], _rng_inputs((32, 16))),
        Case("platform_dependent", per_platform, lambda: [jax.ShapeDtypeStruct((4, 8), jnp.float32)],
             _rng_inputs((4, 8)), expected=lambda x: x + 2.0),
        Case("eigvalsh", eigenvalues, lambda: [jax.ShapeDtypeStruct((8, 8), jnp.float32)], _symmetric),
        Case("pallas", pallas_axpy, lambda: [jax.ShapeDtypeStruct((8, 128), jnp.float32)] * 2,
             _rng_inputs((8, 128), (8, 128)), platforms=("tpu",), expected=lambda x, y: 2 * x + y,
             rtol=1e-6, atol=1e-6),
    ]


# ---- reporting ---------------------------------------------------------------------------------

@dataclass
class Table:
    """The rows of one step: check, outcome (ok, FAIL, info), detail."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, check: str, ok: bool | None, detail: str = "") -> None:
        self.rows.append((check, "info" if ok is None else "ok" if ok else "FAIL", detail))

    def run(self, check: str, thunk: Callable[[], str]) -> None:
        """Runs one check: its detail on success, the exception on failure."""
        try:
            self.add(check, True, thunk())
        except Exception as exc:  # noqa: BLE001 -- a failed check is a row, not a crash
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            self.add(check, False, f"{type(exc).__name__}: {' '.join(lines)[:300]}")

    def print(self, title: str) -> int:
        width = max((len(r[0]) for r in self.rows), default=10)
        print(f"\n{title}\n{'check'.ljust(width)}  result  detail\n{'-' * (width + 40)}")
        for check, outcome, detail in self.rows:
            print(f"{check.ljust(width)}  {outcome.ljust(6)}  {detail}")
        failed = sum(r[1] == "FAIL" for r in self.rows)
        print(f"{'-' * (width + 40)}\n{len(self.rows) - failed} of {len(self.rows)} rows without failure"
              f" ({failed} failed)")
        return 1 if failed else 0


def _versions() -> str:
    devices = jax.devices()
    return (f"jax {jax.__version__}, jaxport {getattr(jaxport, '__version__', '?')}, "
            f"{len(devices)} x {devices[0].device_kind} ({devices[0].platform})")


def _close(got: Any, want: Any, rtol: float, atol: float) -> str:
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return f"max |diff| {float(np.max(np.abs(got - want))) if got.size else 0.0:.2e}"


def _save_arrays(directory: str, stem: str, arrays: Sequence[Any]) -> list[str]:
    names = []
    for i, a in enumerate(arrays):
        name = f"{stem}.{i}.npy"
        np.save(os.path.join(directory, name), np.asarray(a, np.float32))
        names.append(name)
    return names


def _load_arrays(directory: str, names: Sequence[str]) -> list[np.ndarray]:
    return [np.load(os.path.join(directory, n)) for n in names]


# ---- step 1: export (a CPU-only machine) -------------------------------------------------------

def export_step(directory: str, consumer: str) -> int:
    """Writes every case, for ``consumer``, with inputs and expected outputs, into ``directory``."""
    os.makedirs(directory, exist_ok=True)
    table = Table()
    manifest: dict[str, Any] = {"consumer": consumer, "exported_with": _versions(), "cases": []}
    for case in cases():
        def one(case: Case = case) -> str:
            exp = jaxport.export(jax.jit(case.fun), platforms=case.platforms)(*case.specs())
            inputs = case.inputs()
            if case.expected is not None:
                expected = case.expected(*inputs)
            else:
                expected = jax.jit(case.fun)(*inputs)
            entry = {"name": case.name, "file": f"{case.name}.jaxport", "rtol": case.rtol, "atol": case.atol,
                     "inputs": _save_arrays(directory, f"{case.name}.in", inputs),
                     "expected": _save_arrays(directory, f"{case.name}.want", [expected])}
            with open(os.path.join(directory, entry["file"]), "wb") as file:
                file.write(exp.serialize(vjp_order=1 if "cpu" in case.platforms else 0, consumer=consumer))
            manifest["cases"].append(entry)
            if case.name == "pallas":  # as this JAX writes it: what the consumer did without the rewrite
                with open(os.path.join(directory, "pallas_newest.jaxport"), "wb") as file:
                    file.write(exp.serialize())
                manifest["cases"].append(dict(entry, name="pallas_newest", file="pallas_newest.jaxport",
                                              informative=True, consumer_reads=False,
                                              note="written as this JAX writes it, without consumer="))
            return f"{case.platforms}, {os.path.getsize(os.path.join(directory, entry['file']))} bytes"
        table.run(f"export {case.name}", one)

    def bundle() -> str:
        params = {k: jnp.asarray(v, jnp.bfloat16) for k, v in block_params().items()}
        spec = jax.ShapeDtypeStruct((2, SEQ, D_MODEL), jnp.bfloat16)
        exp = jaxport.export(jax.jit(block), platforms=("cpu", "tpu"))(jax.tree_util.tree_map(
            lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params), spec)
        jaxport.save_bundle(os.path.join(directory, "block_bundle"), {"block": exp}, params, consumer=consumer)
        with open(os.path.join(directory, "block.jaxport"), "wb") as file:
            file.write(exp.serialize(consumer=consumer))
        x = np.random.default_rng(2).standard_normal((2, SEQ, D_MODEL)).astype(np.float32)
        want = jax.jit(block)(params, jnp.asarray(x, jnp.bfloat16))
        manifest["cases"].append({"name": "bf16_block", "file": "block.jaxport", "bundle": "block_bundle",
                                  "params": _save_arrays(directory, "block.params", [params[k] for k in sorted(params)]),
                                  "param_names": sorted(params), "rtol": 5e-2, "atol": 1e-1,
                                  "inputs": _save_arrays(directory, "block.in", [x]),
                                  "expected": _save_arrays(directory, "block.want", [want])})
        return "('cpu', 'tpu'), bundle block_bundle and block.jaxport, bfloat16 weights and activations"
    table.run("export bf16_block", bundle)
    for entry in manifest["cases"]:  # what was written for the consumer passes its check; pallas_newest does not
        verdict = jaxport.check_consumer(os.path.join(directory, entry["file"]), consumer)
        table.add(f"check --consumer {entry['file']}", verdict.ok == entry.get("consumer_reads", True),
                  "yes" if verdict.ok else "no: " + "; ".join(verdict.reasons)[:200])
    with open(os.path.join(directory, MANIFEST), "w", encoding="utf-8") as file:
        json.dump(manifest, file, indent=1)
    return table.print(f"export into {directory} for {consumer} ({_versions()})")


# ---- step 2: call (the TPU host) ---------------------------------------------------------------

def _median_seconds(fun: Callable[[], Any], repeat: int) -> float:
    jax.block_until_ready(fun())
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jax.block_until_ready(fun())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def call_step(directory: str, back: str | None, repeat: int) -> int:
    """Calls every case with jaxport and jax.export, times them against jax.jit, exports back."""
    with open(os.path.join(directory, MANIFEST), encoding="utf-8") as text:
        manifest = json.load(text)
    table = Table()
    table.add("machines", None, f"exported with {manifest['exported_with']}; called with {_versions()}")
    originals = {c.name: c.fun for c in cases()}
    originals["pallas_newest"] = pallas_axpy
    for entry in manifest["cases"]:
        name, informative = entry["name"], entry.get("informative", False)
        with open(os.path.join(directory, entry["file"]), "rb") as file:
            blob = file.read()
        args: list[Any] = [jnp.asarray(a) for a in _load_arrays(directory, entry["inputs"])]
        if name == "bf16_block":
            params = dict(zip(entry["param_names"], (jnp.asarray(a, jnp.bfloat16)
                                                     for a in _load_arrays(directory, entry["params"]))))
            args = [params, jnp.asarray(args[0], jnp.bfloat16)]
        (want,) = _load_arrays(directory, entry["expected"])
        results: dict[str, Any] = {}

        def call(peer: str, load: Callable[[bytes], Any], name: str = name, blob: bytes = blob,
                 args: list[Any] = args, want: Any = want, entry: dict[str, Any] = entry) -> str:
            exp = load(blob)
            got = exp.call(*args)
            results[peer] = np.asarray(got, np.float32)
            return _close(got, want, entry["rtol"], entry["atol"])

        for peer, load in (("jaxport", jaxport.deserialize), ("jax.export", lambda b: jax_export.deserialize(bytearray(b)))):
            check = f"{name}: call with {peer}"
            if informative:
                try:
                    detail = call(peer, load)
                    table.add(check, None, f"ran ({entry['note']}): {detail}")
                except Exception as exc:  # noqa: BLE001
                    table.add(check, None, f"failed ({entry['note']}): {str(exc).splitlines()[0][:200]}")
            else:
                table.run(check, lambda peer=peer, load=load: call(peer, load))
        if informative:
            continue
        if len(results) == 2:
            table.run(f"{name}: jaxport == jax.export", lambda: _close(results["jaxport"], results["jax.export"], 0, 0))
        if name == "bf16_block":
            def bundle(entry: dict[str, Any] = entry, args: list[Any] = args, want: Any = want) -> str:
                loaded = jaxport.load_bundle(os.path.join(directory, entry["bundle"]))
                return _close(loaded["block"](args[1]), want, entry["rtol"], entry["atol"])
            table.run(f"{name}: load_bundle and call", bundle)

        def timing(name: str = name, blob: bytes = blob, args: list[Any] = args) -> str:
            ours, peer = jaxport.deserialize(blob), jax_export.deserialize(bytearray(blob))
            jitted = jax.jit(originals.get(name, block))
            base = _median_seconds(lambda: jitted(*args), repeat)
            t_ours = _median_seconds(lambda: ours.call(*args), repeat)
            t_peer = _median_seconds(lambda: peer.call(*args), repeat)
            return (f"eager call / jitted original: jaxport {t_ours / base:.2f}x, jax.export {t_peer / base:.2f}x "
                    f"(jit {base * 1e6:.0f} us, median of {repeat})")
        table.run(f"{name}: timing", timing)
    if back:
        table.run("export back (mlp for tpu, cpu)", lambda: _export_back(back))
    return table.print(f"calls of {directory} on {_versions()}")


def _export_back(back: str) -> str:
    """Exports the MLP here, for ("tpu", "cpu") with its VJP, with its inputs and outputs on this machine."""
    os.makedirs(back, exist_ok=True)
    b, = jaxport.symbolic_shape("b")
    exp = jaxport.export(jax.jit(mlp), platforms=("tpu", "cpu"))(jax.ShapeDtypeStruct((b, 16), jnp.float32))
    (x,) = _rng_inputs((5, 16))()
    with open(os.path.join(back, "mlp.jaxport"), "wb") as file:
        file.write(exp.serialize(vjp_order=1))
    manifest = {"exported_with": _versions(), "file": "mlp.jaxport",
                "inputs": _save_arrays(back, "mlp.in", [x]), "expected": _save_arrays(back, "mlp.want", [exp.call(x)])}
    with open(os.path.join(back, MANIFEST), "w", encoding="utf-8") as file:
        json.dump(manifest, file, indent=1)
    return f"{back}/mlp.jaxport"


# ---- step 3: back (the first machine) ----------------------------------------------------------

def back_step(back: str) -> int:
    """Calls and differentiates, with jaxport and jax.export, the MLP that the TPU host exported."""
    with open(os.path.join(back, MANIFEST), encoding="utf-8") as text:
        manifest = json.load(text)
    with open(os.path.join(back, manifest["file"]), "rb") as file:
        blob = file.read()
    (x,) = _load_arrays(back, manifest["inputs"])
    (want,) = _load_arrays(back, manifest["expected"])
    table = Table()
    table.add("machines", None, f"exported with {manifest['exported_with']}; called with {_versions()}")
    grad_want = jax.grad(lambda v: mlp(v).sum())(x)
    for peer, load in (("jaxport", jaxport.deserialize), ("jax.export", lambda b: jax_export.deserialize(bytearray(b)))):
        table.run(f"mlp: call with {peer}", lambda load=load: _close(load(blob).call(x), want, 2e-2, 2e-2))
        table.run(f"mlp: grad with {peer}", lambda load=load: _close(
            jax.grad(lambda v: load(blob).call(v).sum())(x), grad_want, 2e-2, 2e-2))
    return table.print(f"calls of {back} on {_versions()}")


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module's text)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    steps = parser.add_subparsers(dest="step", required=True)
    export = steps.add_parser("export", help="export every case (a CPU-only machine will do)")
    export.add_argument("directory")
    export.add_argument("--consumer", default="jax==0.10.2", help="the TPU host's JAX (default: %(default)s)")
    call = steps.add_parser("call", help="call every case with jaxport and jax.export (the TPU host)")
    call.add_argument("directory")
    call.add_argument("--back", help="a directory to export the MLP into, for the 'back' step")
    call.add_argument("--repeat", type=int, default=50, help="timed calls per measurement")
    back = steps.add_parser("back", help="call and differentiate what the TPU host exported")
    back.add_argument("directory")
    args = parser.parse_args(argv)
    try:
        if args.step == "export":
            return export_step(args.directory, args.consumer)
        if args.step == "call":
            return call_step(args.directory, args.back, args.repeat)
        return back_step(args.directory)
    except (OSError, KeyError, json.JSONDecodeError) as exc:
        print(f"tpu_check: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
