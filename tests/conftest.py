"""Test-process setup: 8 virtual CPU devices, before any JAX backend starts.

Verification verdicts go to a temporary folder of this run, and JAX's
persistent compilation cache is off unless a test turns it on in a folder of
its own (the ``jax_compilation_cache`` fixture, or a child process's environment).
Sharded exports need several devices; single-device tests run on device 0
as before, so the rest of the suite is unaffected.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Tests never write to the user's home: the verdicts jaxport remembers go to a
# directory of this run, which child processes inherit through the
# environment, and a compilation cache the user configured for JAX is not used.
_CACHE_DIR = tempfile.mkdtemp(prefix="jaxport-test-verdicts-")
os.environ["JAXPORT_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, True)
os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)

import jax  # noqa: E402
import pytest  # noqa: E402

from tests.helpers.jax_cache import KEEP_EVERY_COMPILATION  # noqa: E402

NUM_CPU_DEVICES = 8

jax.config.update("jax_num_cpu_devices", NUM_CPU_DEVICES)



@pytest.fixture
def jax_compilation_cache(tmp_path: Path) -> Iterator[Path]:
    """JAX's persistent compilation cache in a folder of this test, keeping every compilation.

    JAX opens its cache once per process, at the first compilation after a
    directory is set, so the cache is reset before and after (as JAX's own
    tests do) and JAX's settings are put back.
    """
    from jax._src import compilation_cache

    directory = tmp_path / "jax-cache"
    settings = {"jax_compilation_cache_dir": str(directory), **KEEP_EVERY_COMPILATION}
    before = {name: getattr(jax.config, name) for name in settings}
    compilation_cache.reset_cache()
    for name, value in settings.items():
        jax.config.update(name, value)
    try:
        yield directory
    finally:
        for name, value in before.items():
            jax.config.update(name, value)
        compilation_cache.reset_cache()
