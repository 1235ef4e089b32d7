"""A loader of a directory whose second caller waits for a gate: a replica held in its start by the test.

:func:`gated_load` is what a Ray Serve replica's constructor calls (through ``functools.partial``): the first
caller loads at once; any later one writes ``waiting`` in the gate's folder, then waits (at most two minutes)
until the test writes ``go`` there. Ray pickles this module by value (the test registers it), so its workers
need not import the tests.
"""

from __future__ import annotations

import os
import time
from typing import Any


def gated_load(path: str, gate: str) -> Any:
    """The functions of the directory at ``path`` (``load_batches``), the second and later callers first held
    until ``gate/go`` exists."""
    from jaxport.application.serving.batches import load_batches

    try:
        os.close(os.open(os.path.join(gate, "first"), os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        with open(os.path.join(gate, "waiting"), "w"):
            pass
        for _ in range(1200):
            if os.path.exists(os.path.join(gate, "go")):
                break
            time.sleep(0.1)
    return load_batches(path)
