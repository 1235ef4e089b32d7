"""The bundle's ``generate`` against the hand-written ``jax.jit`` loop, in alternating rounds of one process.

``test_generate.py`` times three rounds per chunk and role, which on a
loaded machine swings by more than the gap it looks for. This script times
the two loops of ``test_generate.py`` (``generative.jit_loop``, the cache
donated, and ``jaxport.load_generator`` of the same model's bundle) on the
same prompts, A B then B A, and prints per batch the medians of both the
wall time and the process's CPU time (every thread's), which load from other
processes disturbs less, and the ratios (the bundle's tokens per second over
the loop's; also the median of each round's pair, which a drift of the load
between rounds moves less). Run from the repository root::

    PYTHONPATH=build/importroot python -m benchmarks.generate_alternating --rounds 9 --batches 1,8

Nothing is written outside a temporary folder (the bundle, jaxport's cache).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

PROMPT, NEW, MAX_LENGTH = 32, 64, 128
Loop = Callable[[np.ndarray, int], list[list[int]]]


def timed(loops: dict[str, Loop], prompts: np.ndarray, rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Each loop's ``(wall, cpu)`` seconds per round, the loops in order in even rounds, reversed in odd ones."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in loops}
    for r in range(rounds):
        for name in (list(loops) if r % 2 == 0 else list(reversed(loops))):
            wall, cpu = time.perf_counter(), time.process_time()
            loops[name](prompts, NEW)
            times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    return times


def main() -> None:
    """Saves the model, warms both loops up, checks their tokens agree and prints the medians per batch."""
    parser = argparse.ArgumentParser(description="The bundle's generate against a jax.jit loop, alternating.")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--batches", default="1,8")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jaxport-generate-alternating-") as folder:
        for variable in ("JAXPORT_CACHE_DIR", "XDG_CACHE_HOME", "KERAS_HOME"):
            os.environ.setdefault(variable, os.path.join(folder, variable.lower()))
        import jaxport  # after the cache folders are set

        from . import generative

        generative.save(Path(folder) / "bundle", MAX_LENGTH)
        generator = jaxport.load_generator(Path(folder) / "bundle")
        loops: dict[str, Loop] = {"jax.jit": generative.jit_loop(MAX_LENGTH),
                                  "bundle": lambda prompts, new: generator.generate(prompts.tolist(), new)}
        for batch in (int(b) for b in args.batches.split(",")):
            prompts = np.random.default_rng(batch).integers(1, 8192, size=(batch, PROMPT), dtype=np.int32)
            made = [loop(prompts, NEW) for loop in loops.values()]  # the warm-up round: compiles each step
            times = timed(loops, prompts, args.rounds)
            wall = {name: statistics.median(w for w, _ in t) for name, t in times.items()}
            cpu = {name: statistics.median(c for _, c in t) for name, t in times.items()}
            paired = statistics.median(j[0] / b[0] for j, b in zip(times["jax.jit"], times["bundle"]))
            print(f"b={batch} rounds={args.rounds} load={os.getloadavg()[0]:.1f} same tokens={made[0] == made[1]}  "
                  + "  ".join(f"{name}: {batch * NEW / wall[name]:.1f} tok/s ({cpu[name]:.2f} s CPU)" for name in loops)
                  + f"  bundle/jax.jit: {wall['jax.jit'] / wall['bundle']:.3f}x wall (of each round's pair "
                    f"{paired:.3f}x), {cpu['jax.jit'] / cpu['bundle']:.3f}x CPU", flush=True)


if __name__ == "__main__":
    main()
