"""Golden examples of the small transformer bundle (tests/helpers/iree_model.py), and their check in a child process.

The runtime targets' tests save the bundle with examples, convert it, and
run ``jaxport check --numerics`` on the converted directory in a child
process that must import neither JAX nor TensorFlow.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jaxport
from tests.helpers import iree_model as model

#: ``check_numerics`` and ``jaxport check --numerics`` of ``sys.argv[1]``, with the heavy modules loaded.
CHILD = """
import json, sys
from jaxport.application.cli.main import main
from jaxport.application.conversion.numerics import check_numerics
report = check_numerics(sys.argv[1])
status = main(["check", "--numerics", sys.argv[1]])
print(json.dumps({"report": report.to_json(), "status": status,
                  "loaded": sorted(n for n in ("jax", "jaxlib", "tensorflow") if n in sys.modules)}))
"""


def examples(predict_batches: Sequence[int] = (1, 3),
             loss_batch: int = 2) -> dict[str, list[tuple[tuple[object, ...], dict[str, object]]]]:
    """``predict`` at each of ``predict_batches``, ``loss`` at ``loss_batch``."""
    predict: list[tuple[tuple[object, ...], dict[str, object]]] = [
        ((model.token_ids(b),), {}) for b in predict_batches]
    ids = model.token_ids(loss_batch)
    return {"predict": predict, "loss": [((ids, ids), {})]}


def save_bundle(path: Path, predict_batches: Sequence[int] = (1, 3), loss_batch: int = 2) -> Path:
    """The bundle of :mod:`tests.helpers.iree_model` with :func:`examples`."""
    jaxport.save_bundle(path, model.exported(), model.make_params(),
                        examples=examples(predict_batches, loss_batch))
    return path


def check_in_child(path: Path) -> tuple[list[str], dict[str, Any]]:
    """The table ``jaxport check --numerics`` prints for ``path``, and :data:`CHILD`'s outcome."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    *table, last = done.stdout.strip().splitlines()
    outcome: dict[str, Any] = json.loads(last)
    return table, outcome
