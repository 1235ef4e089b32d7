"""``make fuzz-converted``: the campaign of hostile converted directories, longer than the suite's slice.

One small MLP bundle is converted to each target twice: with a golden
example, and without any (as the README saves a bundle). ``--count`` hostile
copies per target of the first (half re-sealed model files, half hostile
manifests) and ``--count`` / 2 of the second (all re-sealed model files,
:mod:`tests.fuzz.converted`) are loaded and called in child processes that
are restarted when one dies, once with verification (the default of
``load_converted``) and once without it (what the runtime adapters' own
edges type). Prints the count of each outcome per target; exit status 1
when a verified load let anything through but ``refused`` and ``same`` (and,
without golden examples, ``changed``: a re-sealed model that answers
otherwise cannot be told from the original without examples, by design).
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

        bundles = {True: source_bundle(Path(tmp) / "bundle"),
                   False: source_bundle(Path(tmp) / "bundle-no-examples", examples=False)}
        for to in args.to or TARGETS:
            for examples, bundle in bundles.items():
                source = Path(tmp) / f"{to}-{'examples' if examples else 'no-examples'}"
                jaxport.convert(bundle, source, to=to)
                allowed = ("refused", "same") if examples else ("refused", "same", "changed")
                for verify in (True, False):
                    started = time.time()
                    counts = campaign_in_children(source, Path(tmp) / "work", args.count if examples else
                                                  args.count // 2, args.seed, verify=verify, examples=examples,
                                                  timeout=3600)
                    print(f"{to} examples={examples} verify={verify}: {dict(sorted(counts.items()))} "
                          f"({time.time() - started:.0f} s)", flush=True)
                    if verify:
                        bad += sum(n for outcome, n in counts.items() if outcome not in allowed)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
