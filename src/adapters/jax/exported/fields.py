"""An export built from ``jax.export.Exported``'s keyword fields, as JAX's own tools build one.

``jax.export.Exported`` is a public frozen dataclass that tools construct
around a stored module (JAX's back-compatibility harness does:
``Exported(fun_name=..., in_tree=..., ..., _get_vjp=...)``). :func:`jax_objects_from_fields`
takes the same keywords, those of the installed JAX's ``Exported`` (the
fields listed below, from ``jax/_src/export/_export.py`` at each tag), checks
each value and gives the :class:`~.jax_objects.JaxObjects` of the export
and the VJP exporter (``_get_vjp``). A bad field is an
:class:`~jaxport.domain.errors.ExportedFieldError` naming it, never an
export half made.

Symbolic dimensions of another implementation (``jax.export``'s, from its
``symbolic_args_specs``) are read again as jaxport's, from their text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import jax
from jax.core import ShapedArray
from jax.sharding import NamedSharding

from jaxport.adapters.jax.installed import release
from jaxport.adapters.jax.lowering.foreign_dims import is_foreign_dim
from jaxport.adapters.jax.records import aval_record, parse_shapes
from jaxport.adapters.jax.exported.jax_objects import JaxObjects
from jaxport.adapters.mlir.bindings import newest_readable_version
from jaxport.domain.artifact.module_format import check_portable_artifact
from jaxport.domain.artifact.platforms import normalize_platforms
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.domain.artifact.sharding import HloShardingRecord
from jaxport.domain.errors import ArtifactError, ExportedFieldError

#: ``jax.export.Exported``'s fields from jax-v0.10.0 to 0.12 (``_export.py`` at each tag).
FIELDS: Final = ("fun_name", "in_tree", "in_avals", "out_tree", "out_avals", "_in_named_shardings",
                 "_out_named_shardings", "in_shardings_hlo", "out_shardings_hlo", "nr_devices", "platforms",
                 "ordered_effects", "unordered_effects", "disabled_safety_checks", "mlir_module_serialized",
                 "calling_convention_version", "module_kept_var_idx", "uses_global_constants", "_get_vjp")
#: The field that jax-v0.10.0 to 0.11.1 also have (0.11.2 records named shardings always).
HAS_NAMED_SHARDINGS: Final = "_has_named_shardings"

VjpExporter = Callable[[Any], Any]


def installed_fields() -> tuple[str, ...]:
    """The keyword fields of the installed JAX's ``jax.export.Exported``."""
    if release(jax.__version__) >= (0, 11, 2):
        return FIELDS
    return FIELDS[:5] + (HAS_NAMED_SHARDINGS,) + FIELDS[5:]


def jax_objects_from_fields(fields: Mapping[str, Any]) -> tuple[JaxObjects, VjpExporter | None]:
    """The JAX objects and the VJP exporter (``_get_vjp``) of an export given by its fields.

    Args:
        fields: every keyword field of the installed JAX's ``jax.export.Exported``
            (:func:`installed_fields`), and no other.

    Raises:
        ExportedFieldError: a field is unknown, missing, or holds a value that does not fit;
            the message names it.
    """
    known = installed_fields()
    for name in fields:
        if name not in known:
            raise ExportedFieldError(name, f"jax.export.Exported of JAX {jax.__version__} has no such "
                                           f"field; its fields are {', '.join(known)}")
    missing = [name for name in known if name not in fields]
    if missing:
        raise ExportedFieldError(missing[0], "missing: every field of jax.export.Exported is required "
                                             f"(missing: {', '.join(missing)})")
    if HAS_NAMED_SHARDINGS in fields:
        _typed(fields, HAS_NAMED_SHARDINGS, bool)
    in_tree = _typed(fields, "in_tree", jax.tree_util.PyTreeDef)
    out_tree = _typed(fields, "out_tree", jax.tree_util.PyTreeDef)
    children = in_tree.children()
    if len(children) != 2 or children[1].node_data() is None or children[1].node_data()[0] is not dict:
        raise ExportedFieldError("in_tree", f"must be the pytree of (args, kwargs), got {in_tree}")
    in_avals = _avals(fields, "in_avals", in_tree.num_leaves)
    out_avals = _avals(fields, "out_avals", out_tree.num_leaves)
    in_avals, out_avals = _own_dims(in_avals, out_avals)
    module = _typed(fields, "mlir_module_serialized", (bytes, bytearray))
    try:
        check_portable_artifact(bytes(module), newest_readable=newest_readable_version())
    except ArtifactError as exc:
        raise ExportedFieldError("mlir_module_serialized", str(exc)) from None
    get_vjp = fields["_get_vjp"]
    if get_vjp is not None and not callable(get_vjp):
        raise ExportedFieldError("_get_vjp", f"must be None or a function of the Exported, got {get_vjp!r}")
    objects = JaxObjects(
        fun_name=_typed(fields, "fun_name", str),
        in_tree=in_tree, in_avals=in_avals, out_tree=out_tree, out_avals=out_avals,
        in_shardings=_shardings(fields, "in", len(in_avals)),
        out_shardings=_shardings(fields, "out", len(out_avals)),
        nr_devices=_count(fields, "nr_devices", minimum=1),
        platforms=_platforms(fields),
        ordered_effects=tuple(_sequence(fields, "ordered_effects")),
        unordered_effects=tuple(_sequence(fields, "unordered_effects")),
        disabled_safety_checks=tuple(_check(c) for c in _sequence(fields, "disabled_safety_checks")),
        mlir_module_serialized=bytes(module),
        calling_convention_version=_count(fields, "calling_convention_version", minimum=0),
        module_kept_var_idx=_kept(fields, len(in_avals)),
        uses_global_constants=_typed(fields, "uses_global_constants", bool),
    )
    return objects, get_vjp


def _typed(fields: Mapping[str, Any], name: str, kind: type[Any] | tuple[type[Any], ...]) -> Any:
    value = fields[name]
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        raise ExportedFieldError(name, f"must be {' or '.join(k.__name__ for k in kinds)}, got "
                                       f"{type(value).__name__} {value!r:.200}")
    return value


def _sequence(fields: Mapping[str, Any], name: str) -> Sequence[Any]:
    value = fields[name]
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ExportedFieldError(name, f"must be a tuple, got {type(value).__name__} {value!r:.200}")
    return value


def _count(fields: Mapping[str, Any], name: str, *, minimum: int) -> int:
    value = fields[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ExportedFieldError(name, f"must be an int >= {minimum}, got {value!r:.200}")
    return value


def _avals(fields: Mapping[str, Any], name: str, leaves: int) -> tuple[ShapedArray, ...]:
    avals = tuple(_sequence(fields, name))
    for i, aval in enumerate(avals):
        if not isinstance(aval, ShapedArray):
            raise ExportedFieldError(name, f"entry {i} must be a jax.core.ShapedArray, got {aval!r:.200}")
    tree = name.replace("avals", "tree")
    if len(avals) != leaves:
        raise ExportedFieldError(name, f"holds {len(avals)} abstract values, and {tree} has {leaves} leaves")
    return avals


def _own_dims(in_avals: tuple[ShapedArray, ...], out_avals: tuple[ShapedArray, ...]
              ) -> tuple[tuple[ShapedArray, ...], tuple[ShapedArray, ...]]:
    """The avals with another implementation's symbolic dimensions read again as jaxport's, in
    one scope (their constraints are not seen)."""
    avals = in_avals + out_avals
    if not any(is_foreign_dim(d) for a in avals for d in a.shape):
        return in_avals, out_avals
    try:
        shapes = parse_shapes([aval_record(a) for a in avals])
    except ArtifactError as exc:
        raise ExportedFieldError("in_avals", f"a symbolic dimension does not parse: {exc}") from None
    again = tuple(a.update(shape=s) for a, s in zip(avals, shapes))
    return again[:len(in_avals)], again[len(in_avals):]


def _shardings(fields: Mapping[str, Any], side: str, count: int) -> tuple[Any, ...]:
    """The named shardings of one side, else its legacy HLO shardings as records, else Nones."""
    named_field, hlo_field = f"_{side}_named_shardings", f"{side}_shardings_hlo"
    named, hlo = tuple(_sequence(fields, named_field)), tuple(_sequence(fields, hlo_field))
    for name, values in ((named_field, named), (hlo_field, hlo)):
        if len(values) != count:
            raise ExportedFieldError(name, f"holds {len(values)} entries, one per {side}_avals ({count}) expected")
    for i, s in enumerate(named):
        if s is not None and not isinstance(s, NamedSharding):
            raise ExportedFieldError(named_field, f"entry {i} must be a NamedSharding or None, got {s!r:.200}")
    if any(s is not None for s in named) or all(s is None for s in hlo):
        return named
    records = []
    for i, s in enumerate(hlo):
        if s is not None and not hasattr(s, "to_proto"):
            raise ExportedFieldError(hlo_field, f"entry {i} must be an HloSharding or None, got {s!r:.200}")
        records.append(None if s is None else HloShardingRecord(s.to_proto().SerializeToString()))
    return tuple(records)


def _platforms(fields: Mapping[str, Any]) -> tuple[str, ...]:
    platforms = _sequence(fields, "platforms")
    if not platforms or not all(isinstance(p, str) for p in platforms):
        raise ExportedFieldError("platforms", f"must be a non-empty tuple of names, got {platforms!r:.200}")
    try:
        return normalize_platforms(platforms)
    except ValueError as exc:
        raise ExportedFieldError("platforms", str(exc)) from None


def _check(check: Any) -> DisabledSafetyCheck:
    """jaxport's check, or ``jax.export``'s read from its wire form (its ``_impl``, the only way
    that class gives it)."""
    if isinstance(check, DisabledSafetyCheck):
        return check
    wire = getattr(check, "_impl", None)
    try:
        return DisabledSafetyCheck.parse(wire if isinstance(wire, str) else "")
    except ValueError:
        raise ExportedFieldError("disabled_safety_checks",
                                 f"must hold DisabledSafetyCheck values, got {check!r:.200}") from None


def _kept(fields: Mapping[str, Any], nr_in: int) -> tuple[int, ...]:
    kept = tuple(_sequence(fields, "module_kept_var_idx"))
    if (not all(isinstance(i, int) and not isinstance(i, bool) for i in kept)
            or any(b <= a for a, b in zip(kept, kept[1:])) or any(not 0 <= i < nr_in for i in kept)):
        raise ExportedFieldError("module_kept_var_idx",
                                 f"must be sorted distinct indices below {nr_in} (the inputs), got {kept!r:.200}")
    return kept
