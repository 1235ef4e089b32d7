"""``make fuzz-generative``: the campaigns of hostile generative directories and of hostile clients.

Directories: a generative bundle (a tokenizer, a chat template) and its ONNX conversion; ``--count`` hostile
copies of each (:mod:`tests.fuzz.generative`) through ``load_generator``, ``generate``, ``chat`` and
``jaxport check`` in child processes restarted when one dies, then ``--serve`` of them through ``jaxport
serve`` (each must stop before it reports ready, or be ready and answer health). Clients: ``--clients``
hostile requests against one ``jaxport serve`` of the bundle (:mod:`tests.fuzz.hostile_clients`). Prints
the count of each outcome; exit status 1 when anything but ``ok`` and ``refused`` (and the clients' answered
statuses) was seen.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from tests.fuzz.generative import campaign_in_children, hostile, source_directories


def main() -> int:
    """Runs the campaigns and prints their counts."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200, help="hostile copies per directory (default 200)")
    parser.add_argument("--serve", type=int, default=12, help="hostile copies served per directory (default 12)")
    parser.add_argument("--clients", type=int, default=300, help="hostile requests to one server (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="jaxport-fuzz-generative-") as tmp:
        os.environ["JAXPORT_CACHE_DIR"] = os.path.join(tmp, "verdicts")
        sources = source_directories(Path(tmp) / "sources")
        for source in sources:
            started = time.time()
            counts = campaign_in_children(source, Path(tmp) / "work", args.count, args.seed)
            print(f"{source.name}: {dict(sorted(counts.items()))} ({time.time() - started:.0f} s)", flush=True)
            bad += sum(n for outcome, n in counts.items() if outcome not in ("ok", "refused"))
            if args.serve:
                from tests.fuzz.hostile_clients import serve_hostile

                started = time.time()
                served = serve_hostile(source, Path(tmp) / "served", args.serve, args.seed, hostile)
                print(f"{source.name} served: {dict(sorted(served.items()))} ({time.time() - started:.0f} s)",
                      flush=True)
                bad += sum(n for outcome, n in served.items() if outcome not in ("refused", "ready"))
        if args.clients:
            from tests.fuzz.hostile_clients import client_campaign

            started = time.time()
            report = client_campaign(sources[0], Path(tmp) / "clients", args.clients, args.seed)
            print(f"clients: {report} ({time.time() - started:.0f} s)", flush=True)
            bad += 0 if report.ok else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
