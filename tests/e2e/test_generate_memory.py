"""A generation's peak memory does not grow with its length, on every runtime (JAX, ONNX, LiteRT, IREE, TF).

Each loop runs in a fresh child process of its own, on the small GPT with a
64 MiB cache (``ballast``), and reports its peak resident memory (``VmHWM``).
A runner that kept a cache per step, or copied the cache into buffers it did
not free, would grow by a cache per token: 8 caches more in the longer
loop. The bound is half of one cache, whatever the machine's baseline.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import jaxport
from jaxport.domain.targets.registry import TARGETS
from tests.helpers import gpt_model as gpt

BALLAST = 1 << 20  # floats per cache slot: a cache of 64 MiB at one row
CHILD = """
import sys
import jaxport
jaxport.load_generator(sys.argv[1]).generate([1, 2, 3], int(sys.argv[2]))
print(next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gpt.save(tmp_path_factory.mktemp("long") / "bundle", ballast=BALLAST)


def _peak(path: Path, new_tokens: int) -> int:
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), str(new_tokens)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
@pytest.mark.parametrize("runtime", ["bundle", "onnx", "litert", "iree", "savedmodel"])
def test_the_peak_memory_of_a_long_loop_is_that_of_a_short_one(bundle: Path, runtime: str) -> None:
    path = bundle
    if runtime != "bundle":
        missing = [m for m in TARGETS[runtime].loads if importlib.util.find_spec(m) is None]
        if missing:
            pytest.skip(f"{missing[0]} is not installed (pip install 'jaxport[{TARGETS[runtime].extra}]')")
        path = bundle.parent / runtime
        if not path.exists():
            dims = None if runtime in ("onnx", "savedmodel") else {"prefill": [{"b": 1, "s": 3}], "decode": [{"b": 1}]}
            jaxport.convert(bundle, path, to=runtime, dims=dims)
    # 5 tokens (past the first decodes, where a runtime may still lay out its buffers), then as many as fit
    short, long = _peak(path, 5), _peak(path, gpt.MAX_LENGTH - 3)
    cache_bytes = gpt.MAX_LENGTH * BALLAST * 4
    assert long - short <= 0.5 * cache_bytes, (short, long)
