"""The versions of the software in this process, as a :class:`Producer` record."""

from __future__ import annotations

import jax
from jaxlib import version as jaxlib_version

from ..domain.producer import JAXPORT_VERSION, Producer
from .jaxlib_mlir import export_target_version


def this_producer() -> Producer:
    """jaxport's, JAX's and jaxlib's versions here, and the StableHLO version jaxport targets."""
    return Producer(jaxport=JAXPORT_VERSION, jax=jax.__version__, jaxlib=jaxlib_version.__version__,
                    stablehlo=export_target_version())
