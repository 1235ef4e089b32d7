"""One batch of the fuzz campaign, run in a child process so that a crash is counted.

``python -m tests.fuzz.runner CORPUS CAMPAIGN_SEED START COUNT JAX_SHARE CALL_PROBABILITY``
prints one JSON line per mutation: its index, seed name, writer and outcome.

Outcomes at load (``jaxport.deserialize(blob, verify=True)``): ``refused``
(ArtifactError), ``refused_parser_died`` (the verifying process crashed or
hung on the module: contained there), ``untyped_at_load``, and for what loads: ``damaged_loaded``
(a changed jaxport-written artifact that loaded: the digest failed to catch
it), ``trailer_stripped`` (exactly the trailer cut off: jax.export's own
bytes, which load unsealed), ``loaded``. A sample of what loads is called:
``call_ok``, ``call_refused`` (a JaxportError), ``untyped_at_call``,
``wrong_result``.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import os

# The seeds' modules parse in milliseconds: a mutation that makes the parser
# spin is stopped after 3 CPU seconds (the default allows 20).
os.environ.setdefault("JAXPORT_VERIFY_CPU_SECONDS", "3")
os.environ.setdefault("JAXPORT_VERIFY_TIMEOUT", "15")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

import numpy as np  # noqa: E402

import jaxport  # noqa: E402
from jaxport.domain.integrity import unseal  # noqa: E402
from jaxport.errors import JaxportError  # noqa: E402

from .corpus import Seed, expected_results, load  # noqa: E402
from .mutations import mutate  # noqa: E402


def one(seeds: list[Seed], campaign: int, index: int, jax_share: float,
        call_probability: float) -> tuple[Seed, str]:
    """The seed mutated at ``index`` and the outcome."""
    rng = random.Random(f"{campaign}:{index}")
    pool = [s for s in seeds if (s.writer == "jax.export") == (rng.random() < jax_share)]
    seed = rng.choice(pool)
    blob = mutate(seed.blob, rng, rng.choice(seeds).blob)
    try:
        loaded = jaxport.deserialize(blob, verify=True)
    except JaxportError as exc:
        if "verifying process stopped" in str(exc):
            return seed, "refused_parser_died"  # a crash or hang, contained in the verifier
        return seed, "refused"
    except Exception as exc:  # noqa: BLE001 -- what the campaign counts
        return seed, f"untyped_at_load:{type(exc).__name__}"
    if seed.writer == "jaxport":
        stripped = unseal(seed.blob).flatbuffer
        return seed, "trailer_stripped" if blob == stripped else "damaged_loaded"
    if rng.random() >= call_probability:
        return seed, "loaded"
    return seed, _call(loaded, seed)


def _call(loaded: jaxport.Exported, seed: Seed) -> str:
    try:
        got = expected_results(loaded, seed.args, seed.has_vjp and loaded.has_vjp())
    except JaxportError:
        return "call_refused"
    except Exception as exc:  # noqa: BLE001
        return f"untyped_at_call:{type(exc).__name__}"
    want = seed.expected[:len(got)]
    if len(got) < len(seed.expected) - 1 or not all(
            g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)
            for g, w in zip(got, want)):
        return "wrong_result"
    return "call_ok"


def main(argv: list[str]) -> int:
    """Runs the batch; prints one line per mutation."""
    corpus, campaign, start, count = Path(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
    jax_share, call_probability = float(argv[5]), float(argv[6])
    seeds = load(corpus)
    for index in range(start, start + count):
        started = time.perf_counter()
        seed, outcome = one(seeds, campaign, index, jax_share, call_probability)
        print(json.dumps({"i": index, "seed": seed.name, "writer": seed.writer, "outcome": outcome,
                          "s": round(time.perf_counter() - started, 3)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
