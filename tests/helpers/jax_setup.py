"""JAX's set-up for the test folders that run JAX (each one's conftest calls :func:`configure_jax`).

tests/unit runs without JAX (tests/unit/test_no_jax.py checks it), so the
root conftest does not import it: the conftests of the folders that use JAX
(tests/adapters, tests/e2e, tests/compat, tests/multihost, tests/fuzz) call
:func:`configure_jax` when pytest loads them, before any of their test
modules is imported, and e2e's offers :func:`jax_compilation_cache`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import jax
import pytest

from tests.helpers.jax_cache import KEEP_EVERY_COMPILATION

NUM_CPU_DEVICES = 8


def configure_jax() -> None:
    """8 virtual CPU devices, before any JAX backend starts (once per process; later calls do nothing).

    Sharded exports need several devices; single-device tests run on device 0
    as before, so the rest of the suite is unaffected.
    """
    if getattr(jax.config, "jax_num_cpu_devices") != NUM_CPU_DEVICES:
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
