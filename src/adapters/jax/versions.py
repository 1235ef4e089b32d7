"""The versions of the software in this process, as a :class:`Producer` record."""

from __future__ import annotations

import jax
from jaxlib import version as jaxlib_version

from jaxport.domain.artifact.record import JAX_VERSION_GENERATION, WEAK_TYPE_GENERATION, WRITTEN_SERIALIZATION_VERSION
from jaxport.domain.artifact.producer import JAXPORT_VERSION, Producer
from jaxport.adapters.jax.installed import release
from jaxport.adapters.mlir.bindings import export_target_version


def written_format() -> tuple[int, str | None]:
    """The ``(serialization_version, jax_version)`` that ``jax.export`` here writes.

    JAX 0.12.1 writes generation 13 (weak types) and its own version, 0.11.1
    to 0.12.0.1 generation 12 and their version (jax-ml/jax 1c607c1 and
    06d802b, 2026-07-27/29, came before 0.11.1, which refuses the HLO sharding
    protos of 2026-08-03's 76eb902); older releases write 3 and no version.
    """
    installed = release(jax.__version__)
    if installed >= (0, 12, 1):
        return WEAK_TYPE_GENERATION, jax.__version__
    if installed >= (0, 11, 1):
        return JAX_VERSION_GENERATION, jax.__version__
    return WRITTEN_SERIALIZATION_VERSION, None


def hlo_shardings_from_named() -> bool:
    """Whether ``jax.export`` here gives ``in_shardings_hlo``/``out_shardings_hlo`` for named shardings.

    JAX 0.11.2 stopped using them ("Not used anymore starting 3/17/2026"): its
    exports and the artifacts it reads hold NamedShardings only
    (``_in_named_shardings``) and leave both all None; older releases give each
    named sharding's ``HloSharding``.
    """
    return release(jax.__version__) < (0, 11, 2)


def shardy_only() -> bool:
    """Whether JAX here partitions with Shardy whatever ``jax_use_shardy_partitioner`` says.

    JAX 0.12.1 deprecated the flag ("has no effect") and dropped ``jax.export``'s
    GSPMD branches with its "exported with Shardy, called without" error;
    older releases still partition with GSPMD when the flag is off.
    """
    return release(jax.__version__) >= (0, 12, 1)


def this_producer() -> Producer:
    """jaxport's, JAX's and jaxlib's versions here, and the StableHLO version jaxport targets."""
    return Producer(jaxport=JAXPORT_VERSION, jax=jax.__version__, jaxlib=jaxlib_version.__version__,
                    stablehlo=export_target_version())
