"""Test-process setup: 8 virtual CPU devices, before any JAX backend starts.

The cache directory points at a temporary folder of this run.
Sharded exports need several devices; single-device tests run on device 0
as before, so the rest of the suite is unaffected.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

# Tests never write to the user's home: every cache jaxport keeps (compiled
# executables, verification verdicts) goes to a directory of this run, which
# child processes inherit through the environment.
_CACHE_DIR = tempfile.mkdtemp(prefix="jaxport-test-cache-")
os.environ["JAXPORT_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, True)

import jax  # noqa: E402

NUM_CPU_DEVICES = 8

jax.config.update("jax_num_cpu_devices", NUM_CPU_DEVICES)
