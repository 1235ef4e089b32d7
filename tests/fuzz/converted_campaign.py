"""``make fuzz-converted``: the campaign of hostile converted directories, longer than the suite's slice.

One small MLP bundle is converted to each target; ``--count`` hostile copies
per target (half re-sealed model files, half hostile manifests,
:mod:`tests.fuzz.converted`) are loaded and called in child processes that
are restarted when one dies, once with verification (the default of
``load_converted``) and once without it (what the runtime adapters' own
edges type). Prints the count of each outcome per target; exit status 1
when a verified load let anything but ``refused`` and ``same`` through.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from tests.fuzz.converted import campaign_in_children, source_bundle

TARGETS = ("onnx", "litert", "iree", "savedmodel")


def main() -> int:
    """Runs the campaign and prints its counts."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=120, help="hostile copies per target (default 120)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--to", action="append", choices=TARGETS, help="a target (repeat; default: all)")
    args = parser.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="jaxport-fuzz-converted-") as tmp:
        os.environ["JAXPORT_CACHE_DIR"] = os.path.join(tmp, "verdicts")
        import jaxport

        bundle = source_bundle(Path(tmp) / "bundle")
        for to in args.to or TARGETS:
            source = Path(tmp) / to
            jaxport.convert(bundle, source, to=to)
            for verify in (True, False):
                started = time.time()
                counts = campaign_in_children(source, Path(tmp) / "work", args.count, args.seed, verify=verify,
                                              timeout=3600)
                print(f"{to} verify={verify}: {dict(sorted(counts.items()))} ({time.time() - started:.0f} s)",
                      flush=True)
                if verify:
                    bad += sum(n for outcome, n in counts.items() if outcome not in ("refused", "same"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
