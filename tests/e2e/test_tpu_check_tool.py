"""tools/tpu_check.py's first step (export, on this CPU-only machine) runs and writes what the TPU host reads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_export_step_writes_every_case_for_the_tpu_hosts_jax(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "build" / "importroot"))
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "tpu_check.py"), "export", str(tmp_path / "out"),
                           "--consumer", "jax==0.10.2"], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    manifest = json.loads((tmp_path / "out" / "cases.json").read_text())
    assert [c["name"] for c in manifest["cases"]] == [
        "mlp", "platform_dependent", "eigvalsh", "pallas", "pallas_newest", "bf16_block"]
    assert re.search(r"check --consumer pallas_newest\.jaxport +ok +no: the Pallas kernel '_pallas_kernel'",
                     done.stdout), done.stdout
    assert (tmp_path / "out" / "block_bundle" / "manifest.json").is_file()
