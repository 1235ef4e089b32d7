"""What an export is, as one frozen record.

An :class:`ArtifactRecord` holds every field that ``jax.export``'s
``Exported.serialize()`` (jax 0.10.2) writes, in wire terms: shapes are the
dimension strings found on the wire (``"4"``, ``"b"``, ``"2*a + b"``), dtypes
and memory spaces are enums, shardings are abstract meshes with partition
specs (or, for artifacts written before 2026-01-15, serialized HLO sharding
protos), effects are the Python type names JAX records. It is built once per
export: by the export (in this process) or by decoding an artifact's bytes.
``jaxport.Exported`` is this record plus the JAX objects made from it, and
everything that writes, inspects, verifies or runs an export reads it.
The sharding records are :mod:`.sharding`'s; the pytrees, the avals and the
:class:`~jaxport.domain.calls.signature.Signature` that calls are checked
against (:attr:`ArtifactRecord.signature`) are :mod:`jaxport.domain.calls`'.

Nothing here knows the byte layout (that is the flatbuffers adapter's
business) nor JAX's objects (that is the adapters').
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

# What a record is made of, importable from here too.
from jaxport.domain.calls.signature import AvalRecord as AvalRecord, DType as DType, MemorySpace as MemorySpace, Signature
from jaxport.domain.calls.trees import TreeKind as TreeKind, TreeSpec as TreeSpec
from jaxport.domain.deferred import Deferred, DeferredField
from .producer import Producer
from .safety import DisabledSafetyCheck
from .sharding import HloShardingRecord, ShardingRecord

#: The ``serialization_version`` that jax 0.10.2 writes into every artifact
#: (it keeps writing 3 so that readers from before 2025-11 accept the bytes).
WRITTEN_SERIALIZATION_VERSION = 3
#: The format generation from which writers record their number and the JAX version
#: (jax 0.11.2 and later: ``serialization_version`` 12 and ``jax_version``).
JAX_VERSION_GENERATION = 12
#: The format generation that records weak types (``AbstractValue.weak_type``, jax 0.12.1 and later):
#: older generations write every aval strong.
WEAK_TYPE_GENERATION = 13


@dataclass(frozen=True, slots=True)
class EffectRecord:
    """An effect, by the ``str()`` of its Python class, as JAX records it."""

    type_name: str


@dataclass(frozen=True)  # no slots: the VJP of a decoded artifact lives in the instance dict
class ArtifactRecord:
    """Every field of an export, as ``jax.export``'s ``Exported.serialize()`` writes them.

    Attributes:
        function_name: the exported function's name.
        in_tree: the structure of ``(args, kwargs)``.
        in_avals: one per flat input.
        out_tree: the structure of the result.
        out_avals: one per flat output.
        in_shardings: one per flat input; ``None`` is unspecified.
        out_shardings: one per flat output; ``None`` is unspecified.
        nr_devices: the number of devices the module was lowered for.
        platforms: the lowering platforms (``"cpu"``, ``"cuda"``, ``"tpu"``...).
        ordered_effects: effects that ``main`` threads tokens for.
        unordered_effects: the other effects.
        disabled_checks: the safety checks the export turned off.
        mlir_module_serialized: the StableHLO portable artifact.
        calling_convention_version: the calling convention of ``main``
            (checked by the application, not here).
        module_kept_var_idx: the sorted indices of the inputs ``main`` keeps.
        uses_global_constants: whether the module needs shape refinement.
        vjp: the record of the VJP function, if carried (recursively, for
            higher orders): an artifact serialized with ``vjp_order >= 1``
            carries it; an export made in this process exports its VJPs
            when asked, and records none here. It may be deferred too: the
            VJP table of an artifact read from bytes is decoded when first
            read (see :attr:`has_vjp`).
        serialization_version: the version number found when reading (jax
            0.10.2 writes 3 whatever it means); with a ``jax_version`` the
            number written (12, or 13 with weak types), ignored without one.
        constraints: the symbolic constraints of this table's dimensions
            (``"n >= 16"``); ``jax.export``'s format has no place for them, so
            they travel in the jaxport trailer (:mod:`.integrity`).
        producer: the versions that wrote a sealed artifact (from its
            trailer; None for other artifacts and for VJP tables).
        jax_version: the JAX version that format generation 12 records
            (``jax.export`` its own; jaxport the installed JAX's, as
            ``jax.export`` there writes); None for the older layout, which
            records ``serialization_version`` 3.

    The VJP may be given as :class:`~jaxport.domain.deferred.Deferred` (made on first read).
    """

    function_name: str
    in_tree: TreeSpec
    in_avals: tuple[AvalRecord, ...]
    out_tree: TreeSpec
    out_avals: tuple[AvalRecord, ...]
    in_shardings: tuple[ShardingRecord | None, ...]
    out_shardings: tuple[ShardingRecord | None, ...]
    nr_devices: int
    platforms: tuple[str, ...]
    ordered_effects: tuple[EffectRecord, ...]
    unordered_effects: tuple[EffectRecord, ...]
    disabled_checks: tuple[DisabledSafetyCheck, ...]
    mlir_module_serialized: bytes
    calling_convention_version: int
    module_kept_var_idx: tuple[int, ...]
    uses_global_constants: bool
    vjp: DeferredField[ArtifactRecord | None] = DeferredField(None)
    serialization_version: int = WRITTEN_SERIALIZATION_VERSION
    constraints: tuple[str, ...] = ()
    producer: Producer | None = None
    jax_version: str | None = None

    def __post_init__(self) -> None:
        for side, tree, avals, shardings in (("in", self.in_tree, self.in_avals, self.in_shardings),
                                             ("out", self.out_tree, self.out_avals, self.out_shardings)):
            if len(avals) != len(shardings):
                raise ValueError(f"{len(avals)} {side}_avals but {len(shardings)} {side}_shardings")
            if tree.num_leaves != len(shardings):
                raise ValueError(f"{side}_tree has {tree.num_leaves} leaves but there are "
                                 f"{len(shardings)} {side}_avals")
        kinds = {type(s) for s in self.in_shardings + self.out_shardings if s is not None}
        if len(kinds) > 1:
            raise ValueError("the shardings mix named and HLO shardings")
        kept, nr_in = self.module_kept_var_idx, len(self.in_shardings)
        if any(b <= a for a, b in zip(kept, kept[1:])) or any(not 0 <= i < nr_in for i in kept):
            raise ValueError(
                f"module_kept_var_idx {kept} is not a sorted list of distinct indices below {nr_in}")
        if self.nr_devices < 0:
            raise ValueError(f"nr_devices is negative: {self.nr_devices}")

    @property
    def signature(self) -> Signature:
        """What a caller gives and gets: the name, trees, avals and constraints (the call front's view)."""
        return Signature(self.function_name, self.in_tree, self.in_avals, self.out_tree, self.out_avals,
                         self.constraints)

    @property
    def has_vjp(self) -> bool:
        """Whether the record carries a VJP (a deferred one is not made to find out)."""
        return type(self.__dict__["vjp"]) is Deferred or self.vjp is not None

    @property
    def uses_hlo_shardings(self) -> bool:
        """Whether the shardings are legacy HLO shardings (artifacts before 2026-01-15)."""
        return any(isinstance(s, HloShardingRecord)
                   for s in self.in_shardings + self.out_shardings)

    @property
    def chain(self) -> tuple[ArtifactRecord, ...]:
        """This table and the tables of the VJPs it carries, order 0 first."""
        tables, vjp = [self], self.vjp
        while vjp is not None:
            tables.append(vjp)
            vjp = vjp.vjp
        return tuple(tables)

    def with_modules(self, modules: Sequence[bytes]) -> ArtifactRecord:
        """The first ``len(modules)`` tables of :attr:`chain`, each with its module from ``modules`` in
        order (the VJPs after them dropped)."""
        vjp = self.vjp.with_modules(modules[1:]) if len(modules) > 1 and self.vjp is not None else None
        return replace(self, mlir_module_serialized=modules[0], vjp=vjp)

    @property
    def vjp_order(self) -> int:
        """How many orders of VJP the record carries."""
        return len(self.chain) - 1
