"""What ``jaxport upgrade`` makes of an artifact: the same program, in the newest layout of the format.

Reading is the codec's (every layout jaxport or ``jax.export`` ever wrote:
the legacy ``in_avals``/``out_avals`` vectors, a platform inferred from a device
kind, a device count in the 16-bit field); writing it again gives the newest
layout, which records the format version and the JAX version (:func:`renewed`
stamps them). What is left to decide is what no newer JAX reads in any form:

* HLO sharding protos (artifacts before 2026-01-15), each mapped onto the
  named sharding over an abstract mesh that places the same slices on the
  same devices (:mod:`.op_sharding`), over the module's own Shardy mesh where
  it can be; one that has none (maximal, manual, tuple, a device order no mesh
  gives) is refused, by the field that holds it;
* a module's own GSPMD annotations (``mhlo.sharding`` attributes, written by
  a JAX that partitioned with GSPMD) are kept as they are: JAX 0.12.1 calls
  such a module (XLA falls back from Shardy to GSPMD propagation for it, with
  a warning that GSPMD is deprecated), and no pass that jaxlib exposes
  converts them to Shardy's; :func:`gspmd_annotated` finds them, and the
  upgrade's notes say so.

Nothing here writes: the application encodes, seals and writes atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from jaxport.domain.errors import ArtifactError
from .calling_convention import MAXIMUM_VERSION, MINIMUM_VERSION
from .op_sharding import UnrepresentableSharding, as_named_sharding, read_op_sharding
from .record import ArtifactRecord
from .sharding import AbstractMeshRecord, HloShardingRecord, ShardingRecord
from .window import FORMAT_DATES

#: How a module's GSPMD annotations are spelled (a portable artifact keeps attribute names whole).
GSPMD_ATTRIBUTE: Final = b"mhlo.sharding"


class UpgradeRefusedError(ArtifactError):
    """An artifact that ``jaxport upgrade`` cannot carry forward: ``field`` names what (``in_shardings[0]``),
    ``reason`` why; nothing is written."""

    def __init__(self, function: str, field: str, reason: str) -> None:
        self.function, self.field, self.reason = function, field, reason
        super().__init__(f"Cannot upgrade the function '{function}': {field}: {reason}")


@dataclass(frozen=True, slots=True)
class Renewal:
    """An artifact renewed, and what ``upgrade`` says of it.

    Attributes:
        record: the record to write (its VJP chain renewed too).
        notes: what changed or was kept, one line each (shardings mapped, GSPMD annotations kept).
    """

    record: ArtifactRecord
    notes: tuple[str, ...]


def gspmd_annotated(module: bytes) -> bool:
    """Whether a module's bytes carry GSPMD sharding annotations (``mhlo.sharding``)."""
    return GSPMD_ATTRIBUTE in module


def renewed(record: ArtifactRecord, *, version: int, jax_version: str | None,
            map_hlo_shardings: bool = True, meshes: Sequence[AbstractMeshRecord | None] = ()) -> Renewal:
    """``record`` (its VJP chain included) for writing at format ``version`` as ``jax_version`` writes.

    Args:
        record: the artifact as read.
        version: the ``serialization_version`` to record (with ``jax_version``).
        jax_version: the JAX version to record; None writes the layout that records neither
            (``serialization_version`` 3), for a consumer that reads no newer.
        map_hlo_shardings: map HLO sharding protos onto named shardings (False keeps them, for a
            consumer whose reader predates named shardings).
        meshes: per table of the chain, its module's Shardy mesh (:func:`.op_sharding.module_mesh`),
            over which its HLO shardings are named where its axes express them.

    Raises:
        UpgradeRefusedError: an HLO sharding has no named form, a format version that no JAX wrote
            (a newer one holds fields this jaxport would drop), a calling convention that no JAX
            in jaxport's range calls; the message names the field and why.
    """
    notes: list[str] = []

    def one(table: ArtifactRecord, order: int) -> ArtifactRecord:
        vjp = None if table.vjp is None else one(table.vjp, order + 1)
        where = "" if order == 0 else f"vjp (order {order}): "
        _check_versions(table, where)
        in_shardings, out_shardings = table.in_shardings, table.out_shardings
        if map_hlo_shardings and table.uses_hlo_shardings:
            mesh = meshes[order] if order < len(meshes) else None
            in_shardings, out_shardings = _named(table, "in", where, mesh), _named(table, "out", where, mesh)
            notes.append(f"{where}HLO sharding protos mapped onto named shardings over abstract meshes")
        if gspmd_annotated(table.mlir_module_serialized):
            notes.append(f"{where}the module's GSPMD sharding annotations (mhlo.sharding) are kept: JAX 0.12.1 "
                         "calls it through XLA's fallback to GSPMD propagation, which XLA deprecates")
        return replace(table, in_shardings=in_shardings, out_shardings=out_shardings, vjp=vjp,
                       serialization_version=version, jax_version=jax_version)

    return Renewal(one(record, 0), tuple(notes))


def _check_versions(table: ArtifactRecord, where: str) -> None:
    if table.serialization_version not in FORMAT_DATES:
        known = ", ".join(map(str, FORMAT_DATES))
        raise UpgradeRefusedError(table.function_name, f"{where}serialization_version",
                                  f"JAX never wrote format version {table.serialization_version} (it wrote "
                                  f"{known}): a newer format may hold fields that writing it again would drop")
    if not MINIMUM_VERSION <= table.calling_convention_version <= MAXIMUM_VERSION:
        raise UpgradeRefusedError(table.function_name, f"{where}calling_convention_version",
                                  f"calling convention {table.calling_convention_version} is outside the window "
                                  f"[{MINIMUM_VERSION}, {MAXIMUM_VERSION}] that jaxport and JAX call")


def _named(table: ArtifactRecord, side: str, where: str,
           mesh: AbstractMeshRecord | None) -> tuple[ShardingRecord | None, ...]:
    avals = table.in_avals if side == "in" else table.out_avals
    shardings = table.in_shardings if side == "in" else table.out_shardings
    out: list[ShardingRecord | None] = []
    for i, (aval, sharding) in enumerate(zip(avals, shardings)):
        if not isinstance(sharding, HloShardingRecord):
            out.append(sharding)
            continue
        try:
            out.append(as_named_sharding(read_op_sharding(sharding.proto), len(aval.shape), mesh))
        except UnrepresentableSharding as exc:
            raise UpgradeRefusedError(table.function_name, f"{where}{side}_shardings[{i}]",
                                      f"the HLO sharding proto has no named form ({exc}); JAX 0.11.1 and "
                                      "later read named shardings only") from None
    return tuple(out)
