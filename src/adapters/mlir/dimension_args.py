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

jaxport reads both forms through one path: :func:`global_constant_arguments` tells
the form from ``main``'s argument attributes, and :func:`standard_form` wraps
such a ``main`` once more with the domain's shape plan (the same wrapper an
export gets, shape assertions included), after which the module is called,
specialised and converted like any other. A conversion has the verifying
process wrap it (:mod:`.rewrite`), which hands the converters the wrapped module.
"""

from __future__ import annotations

from typing import Any

from jaxport.domain.artifact.calling_convention import GLOBAL_CONSTANT_ATTR, PLATFORM_INDEX
from jaxport.domain.symbolic import ArgDim, DimExpr, build_plan

# JAX's MLIR bindings are imported inside the functions: the calling process imports this
# module for MARKER (:mod:`.rewrite`), and only a module of the dimension-argument form needs them.

#: A cheap test on the module bytes: modules without it need no parsing.
MARKER = GLOBAL_CONSTANT_ATTR.encode()


def global_constant_arguments(module: Any) -> tuple[str, ...]:
    """The names of ``main``'s leading ``jax.global_constant`` arguments, in order: the platform
    index (``_platform_index``) of a multi-platform module, then each dimension variable that
    ``main`` takes as a value (none for the standard form).
    """
    from jaxlib.mlir import ir  # what jax.extend.mlir re-exports; reading needs no JAX import

    main = ir.SymbolTable(module.operation)["main"]
    if "arg_attrs" not in main.attributes:
        return ()
    names: list[str] = []
    for attrs in ir.ArrayAttr(main.attributes["arg_attrs"]):
        entries = ir.DictAttr(attrs)
        if GLOBAL_CONSTANT_ATTR not in entries:
            break
        names.append(ir.StringAttr(entries[GLOBAL_CONSTANT_ATTR]).value)
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
    leading = global_constant_arguments(module)
    names = tuple(n for n in leading if n != PLATFORM_INDEX)
    if not names:
        return None
    from .wrap import wrap_main  # only for this form: a module of the standard form never loads it

    known = {v for shape in in_shapes for d in shape if isinstance(d, DimExpr) for v in d._get_vars()}
    missing = [n for n in names if n not in known]
    if missing:
        raise ValueError(f"main takes the dimension variables {', '.join(names)} as jax.global_constant "
                         f"arguments, but the input shapes do not hold {', '.join(missing)}")
    return wrap_main(module, plan=build_plan(in_shapes, arg_paths), dim_vars=names,
                     has_platform_index=leading[0] == PLATFORM_INDEX, nr_tokens=nr_tokens,
                     kept_var_idx=kept_var_idx, shape_assertions=True,
                     symbolic_dims=tuple(ArgDim(i, j) for i, shape in enumerate(in_shapes)
                                         for j, d in enumerate(shape) if isinstance(d, DimExpr)))
