"""The fuzz campaign: mutate seeds, decode or load them, call a sample, count each outcome.

``python -m tests.fuzz.campaign --mutations 100000`` (what ``make fuzz`` runs)
builds the seeds (:mod:`.corpus`), then runs batches of mutations
(:mod:`.mutations`) in child processes (:mod:`.runner`). When a child dies,
the mutation it was on counts as a ``crash`` and the batch resumes after it.
A share of the mutations is of flatbuffers decoded alone (``codec``), a share
of jax.export-written artifacts, the rest of jaxport-written ones. Prints the
count of each outcome per family and exits non-zero when the goal is missed:
a crash, an untyped exception, a decoded record that does not re-encode to a
fixed point, a reader that worked more than a fixed multiple of the input's
size, a wrong result, or a damaged jaxport-written artifact that loaded.
tests/fuzz/test_campaign_slice.py runs a seeded slice of it in ``make test``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BAD_OUTCOMES = ("crash", "untyped_at_decode", "reencode_failed", "not_a_fixed_point",
                "unbounded_work", "untyped_at_load", "untyped_at_call", "wrong_result",
                "damaged_loaded")
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Counts:
    """Outcome counts, per family (``codec``, ``jax.export``, ``jaxport``)."""

    by_family: dict[str, collections.Counter[str]] = field(
        default_factory=lambda: collections.defaultdict(collections.Counter))
    examples: list[str] = field(default_factory=list)

    def add(self, family: str, outcome: str, detail: str) -> None:
        kind = outcome.split(":")[0]
        self.by_family[family][kind] += 1
        if kind in BAD_OUTCOMES and len(self.examples) < 20:
            self.examples.append(detail)

    def total(self, family: str | None = None) -> int:
        """The mutations counted (of ``family``, else of all)."""
        return sum(sum(c.values()) for f, c in self.by_family.items() if family in (None, f))

    def bad(self) -> int:
        """The mutations whose outcome misses the goal."""
        return sum(c[k] for c in self.by_family.values() for k in BAD_OUTCOMES)

    def report(self) -> str:
        """The counts of each outcome per family, and examples of goal misses."""
        lines = []
        for family in sorted(self.by_family):
            counts = self.by_family[family]
            lines.append(f"{family}: {sum(counts.values())} mutations")
            for outcome, n in sorted(counts.items(), key=lambda kv: -kv[1]):
                lines.append(f"  {outcome:20} {n}")
        lines.append(f"total: {self.total()} mutations; goal misses ({', '.join(BAD_OUTCOMES)}): "
                     f"{self.bad()}")
        lines += [f"  e.g. {e}" for e in self.examples]
        return "\n".join(lines)


#: Builds the corpus in a child process with 8 CPU devices, without the call stack in the modules'
#: locations: they would hold the checkout's path, and the seeded mutations would land elsewhere in
#: each clone (the seeds' bytes, and so the slice's outcomes, are the same in every checkout).
_BUILD = ("import sys; from pathlib import Path; from tests.helpers.jax_setup import configure_jax; "
          "configure_jax(); import jax; jax.config.update('jax_traceback_in_locations_limit', 0); "
          "from tests.fuzz.corpus import build, save; save(build(), Path(sys.argv[1]))")


def build_corpus(folder: Path) -> None:
    """Writes the seeds to ``folder``, built in a child process.

    JAX 0.12 records the Python call stack of the lowering in the module's
    locations: built in this process, the seeds' bytes (and so where each seeded
    mutation lands) would depend on how the campaign was started (pytest,
    pytest-xdist, ``make fuzz``) and where the checkout is. The child's modules
    keep no call stack (:data:`_BUILD`).
    """
    subprocess.run([sys.executable, "-c", _BUILD, str(folder)], cwd=ROOT, check=True, timeout=600)


def run_batch(corpus: Path, campaign: int, start: int, count: int, codec_share: float,
              jax_share: float, call_probability: float, counts: Counts) -> None:
    """Runs mutations ``start..start+count`` in child processes, counting a death as a crash."""
    index, end = start, start + count
    while index < end:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.runner", str(corpus), str(campaign), str(index),
             str(end - index), str(codec_share), str(jax_share), str(call_probability)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert child.stdout is not None
        for line in child.stdout:
            row = json.loads(line)
            counts.add(row["family"], row["outcome"], f"#{row['i']} {row['seed']}: {row['outcome']}")
            index = row["i"] + 1
        code = child.wait()
        if index < end:
            counts.add("(unknown: the child died)", "crash", f"#{index}: child exited with {code}")
            index += 1


def campaign(mutations: int, *, codec_share: float, jax_share: float, call_probability: float,
             batch: int, seed: int = 0, corpus: Path | None = None) -> Counts:
    """Runs the campaign and returns the counts.

    Args:
        mutations: how many to run.
        codec_share: the share of mutations of flatbuffers decoded alone.
        jax_share: the share of mutations of jax.export-written artifacts.
        call_probability: the chance that a jax.export-written artifact that
            loads is also called.
        batch: mutations per child process.
        seed: the campaign's seed: the same seed gives the same mutations.
        corpus: a folder of seeds written by :func:`build_corpus` (else built here).
    """
    counts = Counts()
    with tempfile.TemporaryDirectory(prefix="jaxport-fuzz-") as tmp:
        folder = corpus or Path(tmp)
        if corpus is None:
            build_corpus(folder)
        for start in range(0, mutations, batch):
            run_batch(folder, seed, start, min(batch, mutations - start), codec_share,
                      jax_share, call_probability, counts)
    return counts


def main() -> int:
    """``make fuzz``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mutations", type=int, default=100_000)
    parser.add_argument("--codec-share", type=float, default=0.2)
    parser.add_argument("--jax-export-share", type=float, default=0.08)
    parser.add_argument("--call-probability", type=float, default=0.1)
    parser.add_argument("--batch", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("JAXPORT_CACHE_DIR", tempfile.mkdtemp(prefix="jaxport-fuzz-verdicts-"))
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    started = time.time()
    counts = campaign(args.mutations, codec_share=args.codec_share, jax_share=args.jax_export_share,
                      call_probability=args.call_probability, batch=args.batch, seed=args.seed)
    print(counts.report())
    print(f"({time.time() - started:.0f} s)")
    return 1 if counts.bad() else 0


if __name__ == "__main__":
    sys.exit(main())
