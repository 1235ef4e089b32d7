"""What differs between two artifacts, field by field, for ``jaxport diff``.

Every field of the two records is compared, on each table of the VJP chain
(a VJP's fields are named after it: ``vjp() signature``, ``vjp().vjp() ...``):
first what :class:`ArtifactInfo` shows (signature, platforms, calling
convention, devices, shardings, effects, disabled checks, VJP order, module
size and StableHLO version), then what it does not (kept arguments, shape
refinement, pytree node data, the avals' table entries, serialization version,
symbolic constraints), then the modules' operation counts, which the caller
gives (reading a module needs MLIR, which the domain does not know).

The jaxport trailer holds the symbolic constraints, which ``jax.export``'s
format cannot. When only one artifact has a trailer (a jaxport file and a
``jax.export`` file, or ``serialize(integrity=False)``), the other cannot
hold constraints, so theirs are not a difference: a note says which artifact
has the trailer and the constraints it adds. Between two sealed artifacts,
different constraints are a difference (each states its own).

The versions that wrote the artifacts (the trailer's ``producer``) say who
made the bytes, not what the program is: they are never a difference; a note
says when two artifacts were written by different versions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .record import ArtifactRecord, AvalRecord, TreeSpec
from .sharding import HloShardingRecord, ShardingRecord
from .info import ArtifactInfo, sharding_text

#: Reads a module's bytes and counts its operations by name.
OpCounts = Callable[[bytes], Mapping[str, int]]

_VJP_ORDER = "vjp order"
_FIELDS = (
    ("function name", "fun_name"), ("signature", "signature"), ("platforms", "platforms"),
    ("calling convention", "calling_convention_version"), ("devices", "nr_devices"),
    ("in shardings", "in_shardings"), ("out shardings", "out_shardings"),
    ("ordered effects", "ordered_effects"), ("unordered effects", "unordered_effects"),
    ("disabled checks", "disabled_checks"), (_VJP_ORDER, "vjp_order"),
    ("module size (bytes)", "module_size"), ("StableHLO version", "stablehlo_version"),
    ("weak types", "weak_types"),
)
#: The record's fields that the summary does not show, by the name a difference gets.
_RECORD_FIELDS = (
    ("kept arguments", "module_kept_var_idx"), ("needs shape refinement", "uses_global_constants"),
    ("serialization version", "serialization_version"),
)
#: Every field of ArtifactRecord that :func:`record_differences` compares (a test keeps it whole).
COMPARED_FIELDS = frozenset({
    "function_name", "in_tree", "in_avals", "out_tree", "out_avals", "in_shardings",
    "out_shardings", "nr_devices", "platforms", "ordered_effects", "unordered_effects",
    "disabled_checks", "mlir_module_serialized", "calling_convention_version", "vjp",
    "constraints", *(name for _, name in _RECORD_FIELDS)})
#: The fields that are never a difference (who wrote the bytes, not what the program is).
NOT_COMPARED = frozenset({"producer", "jax_version"})


@dataclass(frozen=True, slots=True)
class Difference:
    """One field that differs: its name, and its value in the first and the second artifact.

    >>> print(Difference("platforms", "cpu", "cpu, tpu"))
    platforms: cpu -> cpu, tpu
    """

    what: str
    first: str
    second: str

    def __str__(self) -> str:
        if len(self.first) + len(self.second) <= 60:
            return f"{self.what}: {self.first} -> {self.second}"
        return f"{self.what}:\n  - {self.first}\n  + {self.second}"


@dataclass(frozen=True, slots=True)
class Compared:
    """One of the two artifacts of a comparison.

    Attributes:
        name: how messages name it (its file).
        record: its decoded record.
        sealed: whether it ends with the jaxport trailer.
    """

    name: str
    record: ArtifactRecord
    sealed: bool


@dataclass(frozen=True, slots=True)
class Comparison:
    """What :func:`compare` found: the differences, a note on the trailer when one lacks it,
    and one when different versions wrote them."""

    differences: tuple[Difference, ...]
    trailer_note: str | None
    producer_note: str | None = None

    def lines(self) -> list[str]:
        """The differences, one (or three) lines each, then the notes."""
        out = [line for d in self.differences for line in str(d).splitlines()]
        return out + [note for note in (self.trailer_note, self.producer_note) if note]


def compare(first: Compared, second: Compared, op_counts: OpCounts) -> Comparison:
    """Every difference between two artifacts, and what the trailer adds when only one has it.

    Args:
        first, second: the artifacts.
        op_counts: called only for modules whose bytes differ.
    """
    one_sealed = first.sealed != second.sealed
    found = record_differences(first.record, second.record, op_counts, constraints=not one_sealed)
    writers = _producer_note(first, second)
    if not one_sealed:
        return Comparison(tuple(found), None, writers)
    sealed, other = (first, second) if first.sealed else (second, first)
    start = "" if found else "same program; "
    levels = [table.constraints for table in sealed.record.chain]
    if any(levels):
        note = (f"{start}only {sealed.name} has the jaxport trailer, with symbolic constraints "
                f"that {other.name} cannot record: {_levels_text(levels)}")
    else:
        note = f"{start}only {sealed.name} has the jaxport trailer (it holds no symbolic constraints)"
    return Comparison(tuple(found), note, writers)


def _producer_note(first: Compared, second: Compared) -> str | None:
    """A line when both artifacts say which versions wrote them and those differ."""
    a, b = first.record.producer, second.record.producer
    if a is None or b is None or a == b:
        return None
    return (f"written by different versions (not a difference of the program): "
            f"{first.name}: {a}; {second.name}: {b}")


def record_differences(first: ArtifactRecord, second: ArtifactRecord, op_counts: OpCounts, *,
                       constraints: bool = True) -> list[Difference]:
    """The differences of every field, table by table along the two VJP chains.

    Args:
        first, second: the records.
        op_counts: called only for modules whose bytes differ.
        constraints: whether to compare the symbolic constraints.
    """
    found: list[Difference] = []
    for level, (a, b) in enumerate(zip(first.chain, second.chain)):
        table = _table_differences(a, b, op_counts, constraints)
        found += [Difference(_table_name(level) + d.what, d.first, d.second) for d in table
                  if level == 0 or d.what != _VJP_ORDER]  # said once, at the top
    return found


def info_differences(first: ArtifactInfo, second: ArtifactInfo) -> list[Difference]:
    """The fields of the two summaries that differ, in a fixed order."""
    return _field_differences(_FIELDS, first, second)


def _field_differences(fields: tuple[tuple[str, str], ...], first: object, second: object) -> list[Difference]:
    """The attributes of ``fields`` (a difference's name, the attribute) that differ, in their order."""
    pairs = ((what, getattr(first, name), getattr(second, name)) for what, name in fields)
    return [Difference(what, _text(a), _text(b)) for what, a, b in pairs if a != b]


def op_count_differences(first: Mapping[str, int], second: Mapping[str, int]) -> list[Difference]:
    """The operations whose count differs between two modules, by name.

    >>> [str(d) for d in op_count_differences({"stablehlo.sine": 2, "func.func": 1},
    ...                                       {"stablehlo.cosine": 2, "func.func": 1})]
    ['module ops stablehlo.cosine: 0 -> 2', 'module ops stablehlo.sine: 2 -> 0']
    """
    return [Difference(f"module ops {name}", str(first.get(name, 0)), str(second.get(name, 0)))
            for name in sorted(set(first) | set(second)) if first.get(name, 0) != second.get(name, 0)]


def _table_differences(a: ArtifactRecord, b: ArtifactRecord, op_counts: OpCounts,
                       constraints: bool) -> list[Difference]:
    """The differences of one table (its VJP compared by the caller)."""
    info_a, info_b = ArtifactInfo.of(a), ArtifactInfo.of(b)
    found = info_differences(info_a, info_b)
    if info_a.signature == info_b.signature:  # what the text does not show
        found += _node_data_differences("in pytree", a.in_tree, b.in_tree)
        found += _node_data_differences("out pytree", a.out_tree, b.out_tree)
        found += _variant_differences("in avals", a.in_avals, b.in_avals)
        found += _variant_differences("out avals", a.out_avals, b.out_avals)
    if info_a.in_shardings == info_b.in_shardings:
        found += _sharding_differences("in shardings", a.in_shardings, b.in_shardings)
    if info_a.out_shardings == info_b.out_shardings:
        found += _sharding_differences("out shardings", a.out_shardings, b.out_shardings)
    found += _field_differences(_RECORD_FIELDS, a, b)
    if constraints and a.constraints != b.constraints:
        found.append(Difference("symbolic constraints", _text(a.constraints), _text(b.constraints)))
    if a.mlir_module_serialized != b.mlir_module_serialized:
        counts = op_count_differences(op_counts(a.mlir_module_serialized), op_counts(b.mlir_module_serialized))
        found += counts or [Difference("module", "bytes differ", "same operation counts")]
    return found


def _node_data_differences(what: str, a: TreeSpec, b: TreeSpec) -> list[Difference]:
    """The first custom node whose serialized auxiliary data differ (the trees have one shape)."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if x.custom_auxdata != y.custom_auxdata:
            return [Difference(f"{what} node data of {x.custom_name}",
                               _bytes_text(x.custom_auxdata), _bytes_text(y.custom_auxdata))]
        pending.extend(reversed(list(zip(x.children, y.children))))
    return []


def _variant_differences(what: str, a: tuple[AvalRecord, ...], b: tuple[AvalRecord, ...]
                         ) -> list[Difference]:
    """Avals equal on the wire but kept apart in the writer's table (a sharding; before format
    generation 13 a weak type). Weak types themselves are the summary's."""
    if [v.variant for v in a] == [v.variant for v in b]:
        return []
    return [Difference(f"{what} table entries", _variants_text(a), _variants_text(b))]


def _sharding_differences(what: str, a: tuple[ShardingRecord | None, ...],
                          b: tuple[ShardingRecord | None, ...]) -> list[Difference]:
    """The first sharding that differs in what its short text leaves out (axis types, device, HLO bytes)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return [Difference(f"{what}[{i}]", _sharding_detail(x), _sharding_detail(y))]
    return []


def _sharding_detail(sharding: ShardingRecord | None) -> str:
    if isinstance(sharding, HloShardingRecord):
        return f"hlo-sharding {_bytes_text(sharding.proto)}"
    if sharding is None:
        return "unspecified"
    mesh = sharding.mesh
    device = mesh.abstract_device
    kind = "" if device is None else f", device {device.device_kind} ({device.platform}, {device.num_cores} cores)"
    return f"{sharding_text(sharding)}, axis types {', '.join(t.value for t in mesh.axis_types)}{kind}"


def _variants_text(avals: tuple[AvalRecord, ...]) -> str:
    return ", ".join(f"{v} (entry {v.variant})" if v.variant else str(v) for v in avals)


def _bytes_text(data: bytes) -> str:
    text = repr(data)
    return text if len(text) <= 40 else f"{len(data)} bytes, {data[:12]!r}..."


def _levels_text(levels: list[tuple[str, ...]]) -> str:
    """``b >= 16`` when every table has the same constraints, else each table's."""
    if all(level == levels[0] for level in levels):
        return _text(levels[0])
    return "; ".join(f"{_table_name(k)}{_text(level)}" for k, level in enumerate(levels))


def _table_name(level: int) -> str:
    """How the fields of the table at ``level`` of the VJP chain are prefixed: ``vjp().vjp() ``."""
    return ".".join(["vjp()"] * level) + " " if level else ""


def _text(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value) if value else "none"
    return "unknown" if value is None else str(value)

