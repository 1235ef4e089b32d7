"""Test-process setup: 8 virtual CPU devices, before any JAX backend starts.

Sharded exports need several devices; single-device tests run on device 0
as before, so the rest of the suite is unaffected.
"""

from __future__ import annotations

import jax

NUM_CPU_DEVICES = 8

jax.config.update("jax_num_cpu_devices", NUM_CPU_DEVICES)
