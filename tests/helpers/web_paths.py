"""Where the browser module's files are: the ES module shipped in the package, the tests' shared list."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The ES module that ``--web`` copies into a converted directory.
MODULE = ROOT / "src" / "adapters" / "web" / "jaxport.mjs"
#: The bad calls and the messages jaxport's Python front raises for them (both fronts' tests read it).
BAD_CALLS = ROOT / "tests" / "web" / "bad_calls.json"
