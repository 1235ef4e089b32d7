"""Modules whose ``main`` takes its dimension variables as ``jax.global_constant`` arguments.

``jax.export`` wraps a shape-polymorphic module so that ``main`` computes its
dimension variables from the argument shapes and takes only ``(platform
index?, tokens..., arrays...)``. It finds those variables with
``shape_poly.all_dim_vars``, which knows only JAX's own symbolic dimensions;
JAX's lowering finds them through any dimension's ``_get_vars``. So when
``jax.export.export`` (0.10 through 0.12 alike) is given jaxport's symbolic
dimensions, or a mix of jaxport's and JAX's, the lowered ``main``'s leading
``tensor<i32> {jax.global_constant = "b"}`` arguments are left in the public
``main``: its callers must pass each variable's value. ``jax.export`` itself
cannot call such a module (it reports the variable as unsolvable).

jaxport reads both forms through one path: :func:`dimension_arguments` tells
the form from ``main``'s argument attributes, and :func:`standard_form` wraps
such a ``main`` once more with the domain's shape plan (the same wrapper an
export gets, shape assertions included), after which the module is called,
specialised and converted like any other.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.module_format import STABLEHLO_TARGET_VERSION, stablehlo_version
from jaxport.domain.calls.front import leaf_paths, record_shapes
from jaxport.domain.symbolic import ArgDim, DimExpr, build_plan

# JAX's MLIR bindings are imported inside the functions: converters import this module to
# look at every record, and only a module of the dimension-argument form needs them.

#: The ``jax.global_constant`` name of the platform-index argument.
PLATFORM_INDEX = "_platform_index"
#: A cheap test on the module bytes: modules without it need no parsing.
MARKER = b"jax.global_constant"


def dimension_arguments(module: Any) -> tuple[str, ...]:
    """The dimension variables that ``main`` of ``module`` takes as leading arguments, in order.

    Empty for the standard form (only the platform index, if any, is a
    ``jax.global_constant`` argument of ``main``).
    """
    from jaxlib.mlir import ir  # what jax.extend.mlir re-exports; reading needs no JAX import

    main = ir.SymbolTable(module.operation)["main"]
    if "arg_attrs" not in main.attributes:
        return ()
    names: list[str] = []
    for attrs in ir.ArrayAttr(main.attributes["arg_attrs"]):
        entries = ir.DictAttr(attrs)
        if "jax.global_constant" not in entries:
            break
        name = ir.StringAttr(entries["jax.global_constant"]).value
        if name != PLATFORM_INDEX:
            names.append(name)
    return tuple(names)


def standard_form(module: Any, in_shapes: tuple[tuple[Any, ...], ...], arg_paths: tuple[str, ...], *,
                  nr_tokens: int, kept_var_idx: tuple[int, ...]) -> Any | None:
    """``module`` with a ``main`` that computes its dimension arguments, or None if it takes none.

    Args:
        module: the module (left unchanged; the result lives in a new context).
        in_shapes: the exported input shapes (ints and jaxport's symbolic dimensions).
        arg_paths: each flat input's path, for the shape assertions' messages.
        nr_tokens: the number of ordered effects.
        kept_var_idx: the flat inputs that ``main`` takes.

    Raises:
        ValueError: ``main`` takes a dimension variable that no input shape holds.
    """
    from jax.extend.mlir import ir

    from .wrap import wrap_main

    names = dimension_arguments(module)
    if not names:
        return None
    known = {v for shape in in_shapes for d in shape if isinstance(d, DimExpr) for v in d._get_vars()}
    missing = [n for n in names if n not in known]
    if missing:
        raise ValueError(f"main takes the dimension variables {', '.join(names)} as jax.global_constant "
                         f"arguments, but the input shapes do not hold {', '.join(missing)}")
    main = ir.SymbolTable(module.operation)["main"]
    first = ir.DictAttr(ir.ArrayAttr(main.attributes["arg_attrs"])[0])
    has_platform_index = ir.StringAttr(first["jax.global_constant"]).value == PLATFORM_INDEX
    return wrap_main(module, plan=build_plan(in_shapes, arg_paths), dim_vars=names,
                     has_platform_index=has_platform_index, nr_tokens=nr_tokens,
                     kept_var_idx=kept_var_idx, shape_assertions=True,
                     symbolic_dims=tuple(ArgDim(i, j) for i, shape in enumerate(in_shapes)
                                         for j, d in enumerate(shape) if isinstance(d, DimExpr)))



def standard_record(record: ArtifactRecord, *, newest_readable: str | None = None) -> ArtifactRecord:
    """``record`` (and its VJP chain) with modules of the standard form, for a converter.

    A converter hands ``main`` to another runtime (``XlaCallModule``, IREE): a
    module of the dimension-argument form is wrapped (:func:`standard_form`),
    and with ``newest_readable`` a module written for a newer StableHLO is
    written again for that version (what the runtime's StableHLO reads, when
    the module uses nothing newer). Otherwise a module is written for the
    version it was written for. Records that need neither are returned as they are.

    Raises:
        ArtifactError: the record's dimensions do not parse, or ``main`` takes a
            dimension variable that no input shape holds. (A module that cannot be
            written for ``newest_readable`` is left as it is, for the runtime's own
            check to refuse.)
    """
    vjp = standard_record(record.vjp, newest_readable=newest_readable) if record.vjp is not None else None
    module_bytes = record.mlir_module_serialized
    target = stablehlo_version(module_bytes[:300]) or STABLEHLO_TARGET_VERSION
    older = newest_readable is not None and _key(target) > _key(newest_readable)
    symbolic = any(not d.isdigit() for a in record.in_avals for d in a.shape)
    unchanged = record if vjp is record.vjp else dataclasses.replace(record, vjp=vjp)
    if symbolic and MARKER in module_bytes:
        rewritten = _standard_bytes(record, target, newest_readable if older else None)
    elif older and newest_readable is not None:
        rewritten = _retargeted(module_bytes, newest_readable)
    else:
        return unchanged
    if rewritten is None:
        return unchanged
    return dataclasses.replace(record, mlir_module_serialized=rewritten, vjp=vjp)


def _retargeted(module_bytes: bytes, version: str) -> bytes | None:
    """The module written for the older StableHLO ``version``, with jaxlib alone (no JAX import:
    converting to a SavedModel imports none); None when this jaxlib cannot do it (the
    runtime's own check then refuses the module with its reason)."""
    from . import bindings as jaxlib_mlir

    try:
        context = jaxlib_mlir.make_context()
        module = jaxlib_mlir.deserialize_portable_artifact(module_bytes, context)
        with context:
            return jaxlib_mlir.serialize_portable_artifact(module, version, True)
    except Exception:  # a module newer than this jaxlib, or one using newer operations
        return None


def _standard_bytes(record: ArtifactRecord, target: str, older: str | None) -> bytes | None:
    """The module of the dimension-argument form, wrapped and written for ``older`` or ``target``."""
    from . import bindings as jaxlib_mlir

    # JAX is imported only for a module of that form (converting to a SavedModel imports none).
    module = jaxlib_mlir.deserialize_portable_artifact(record.mlir_module_serialized,
                                                       jaxlib_mlir.make_context())
    if not dimension_arguments(module):
        return _retargeted(record.mlir_module_serialized, older) if older is not None else None
    from jax.extend import mlir as jex_mlir

    from jaxport.adapters.jax import internals as jax_internals

    try:
        standard = standard_form(module, tuple(record_shapes(record.in_avals, record.constraints)),
                                 leaf_paths(record.in_tree), nr_tokens=len(record.ordered_effects),
                                 kept_var_idx=record.module_kept_var_idx)
    except ValueError as exc:
        raise ArtifactError(f"function '{record.function_name}': {exc}") from exc
    if standard is None:
        return _retargeted(record.mlir_module_serialized, older) if older is not None else None
    for version in ((older, target) if older is not None else (target,)):
        try:
            with standard.context:
                return bytes(jex_mlir.serialize_portable_artifact(
                    standard, version, jax_internals.backend_serializes_with_sdy()))
        except Exception:  # newer operations than `older` reads: the runtime's check refuses it
            continue
    raise ArtifactError(f"function '{record.function_name}': its module, wrapped to compute its "
                        f"dimension arguments, cannot be written for StableHLO {target}")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())
