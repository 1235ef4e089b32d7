"""One batch of the fuzz campaign, run in a child process so that a crash is counted.

``python -m tests.fuzz.runner CORPUS CAMPAIGN_SEED START COUNT CODEC_SHARE JAX_SHARE CALL_PROBABILITY``
prints one JSON line per mutation: its index, seed name, family and outcome.

A flatbuffer seed's mutation is decoded alone (``decode_artifact``, its VJP chain read):
``refused`` (ArtifactError), ``untyped_at_decode``, or, for a record, the
record must re-encode to bytes that are a fixed point of the codec
(``decoded``; else ``reencode_failed`` or ``not_a_fixed_point``). Not
necessarily to the same record: a corrupted table of unique avals may number
wire-equal avals differently from how the writer numbers them.

An artifact seed's mutation is loaded (``jaxport.deserialize(blob,
verify=True)``): ``refused`` (ArtifactError), ``refused_parser_died`` (the
verifying process crashed or hung on the module: contained there),
``untyped_at_load``, and for what loads: ``damaged_loaded`` (a changed
jaxport-written artifact that loaded: the digest failed to catch it),
``trailer_stripped`` (exactly the trailer cut off: jax.export's own bytes,
which load unsealed), ``loaded``. A sample of what loads is called:
``call_ok``, ``call_refused`` (a JaxportError), ``untyped_at_call``,
``changed_program`` (the results differ from the seed's, and ``jax.export``
reading the same bytes computes the same as jaxport: the mutation made
another valid program, which nobody can tell from the original in an
artifact without a digest, such as a constant's value changed inside the
module), ``wrong_result`` (jaxport's results differ from ``jax.export``'s for
the same bytes).

Either way the wire readers count their work: more than a fixed multiple of
the mutation's size is ``unbounded_work``.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

# The seeds' modules parse in milliseconds: a mutation that makes the parser
# spin is stopped after 3 CPU seconds (the default allows 20).
os.environ.setdefault("JAXPORT_VERIFY_CPU_SECONDS", "3")
os.environ.setdefault("JAXPORT_VERIFY_TIMEOUT", "15")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

import numpy as np  # noqa: E402

import jaxport  # noqa: E402
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact  # noqa: E402
from jaxport.adapters.flatbuffers.reader import WireReader  # noqa: E402
from jaxport.domain.artifact.integrity import unseal  # noqa: E402
from jaxport.errors import ArtifactError, JaxportError  # noqa: E402
from tests.helpers.artifacts import linear_work, recorded_readers  # noqa: E402

from .corpus import Seed, expected_results, load, placed, results_of  # noqa: E402
from .mutations import mutate  # noqa: E402


def one(seeds: list[Seed], campaign: int, index: int, codec_share: float, jax_share: float,
        call_probability: float, readers: list[WireReader]) -> tuple[Seed, str]:
    """The seed mutated at ``index`` and the outcome (``readers``: those decoding creates)."""
    rng = random.Random(f"{campaign}:{index}")
    draw = rng.random()
    family = ("codec" if draw < codec_share else
              "jax.export" if draw < codec_share + jax_share else "jaxport")
    seed = rng.choice([s for s in seeds if s.family == family])
    blob = mutate(seed.blob, rng, rng.choice(seeds).blob, seed.module_at)
    readers.clear()
    if seed.target == "codec":
        return seed, _decode(blob, readers)
    return seed, _load(seed, blob, rng, call_probability, readers)


def _over_budget(readers: list[WireReader], size: int) -> bool:
    return any(reader.work_done > linear_work(size) for reader in readers)


def _decode(blob: bytes, readers: list[WireReader]) -> str:
    try:
        record = decode_artifact(blob)
        vjp = record.vjp  # the VJP tables are decoded when first read: read them all here
        while vjp is not None:
            vjp = vjp.vjp
    except ArtifactError:
        return "unbounded_work" if _over_budget(readers, len(blob)) else "refused"
    except Exception as exc:  # noqa: BLE001 -- what the campaign counts
        return f"untyped_at_decode:{type(exc).__name__}"
    if _over_budget(readers, len(blob)):
        return "unbounded_work"
    try:
        again = encode_artifact(record)
        fixed = encode_artifact(decode_artifact(again)) == again
    except Exception as exc:  # noqa: BLE001
        return f"reencode_failed:{type(exc).__name__}"
    return "decoded" if fixed else "not_a_fixed_point"


def _load(seed: Seed, blob: bytes, rng: random.Random, call_probability: float,
          readers: list[WireReader]) -> str:
    try:
        loaded = jaxport.deserialize(blob, verify=True)
    except JaxportError as exc:
        if _over_budget(readers, len(blob)):
            return "unbounded_work"
        if "verifying process stopped" in str(exc):
            return "refused_parser_died"  # a crash or hang, contained in the verifier
        return "refused"
    except Exception as exc:  # noqa: BLE001 -- what the campaign counts
        return f"untyped_at_load:{type(exc).__name__}"
    if _over_budget(readers, len(blob)):
        return "unbounded_work"
    if seed.writer == "jaxport":
        stripped = unseal(seed.blob).flatbuffer
        return "trailer_stripped" if blob == stripped else "damaged_loaded"
    if rng.random() >= call_probability:
        return "loaded"
    return _call(loaded, seed, blob)


def _call(loaded: jaxport.Exported, seed: Seed, blob: bytes) -> str:
    try:
        got = expected_results(loaded, seed.args, seed.has_vjp and loaded.has_vjp())
    except JaxportError:
        return "call_refused"
    except Exception as exc:  # noqa: BLE001
        return f"untyped_at_call:{type(exc).__name__}"
    if _same(got, seed.expected):
        return "call_ok"
    return "changed_program" if _same(got, _theirs(blob, loaded, seed)) else "wrong_result"


def _same(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...] | None) -> bool:
    """Whether ``got`` holds ``want``'s results (the gradient may be missing: a mutation can drop it)."""
    return want is not None and len(got) >= len(want) - 1 and all(
        g.shape == w.shape and np.allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)
        for g, w in zip(got, want[:len(got)]))


def _theirs(blob: bytes, loaded: jaxport.Exported, seed: Seed) -> tuple[np.ndarray, ...] | None:
    """What ``jax.export`` computes from the same bytes, its arguments placed as for ``loaded``
    (None: it refuses them or fails)."""
    from jax import export

    try:
        theirs = export.deserialize(bytearray(blob))
        return results_of(theirs.call, placed(loaded, seed.args), seed.has_vjp and loaded.has_vjp())
    except Exception:  # noqa: BLE001 -- jax.export's refusal: not the same program then
        return None


def main(argv: list[str]) -> int:
    """Runs the batch; prints one line per mutation."""
    corpus, campaign, start, count = Path(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
    codec_share, jax_share, call_probability = float(argv[5]), float(argv[6]), float(argv[7])
    seeds = load(corpus)
    with recorded_readers() as readers:
        for index in range(start, start + count):
            started = time.perf_counter()
            seed, outcome = one(seeds, campaign, index, codec_share, jax_share, call_probability,
                                readers)
            print(json.dumps({"i": index, "seed": seed.name, "family": seed.family,
                              "outcome": outcome, "s": round(time.perf_counter() - started, 3)}),
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
