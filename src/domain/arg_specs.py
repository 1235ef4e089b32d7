"""Array specs as the command line writes them: ``f32[b,784]``, ``bf16[8,b]``, ``i32[]``.

A spec is a dtype, short (``f32``) or NumPy's name (``float32``), then the
dimensions in brackets: integers and symbolic expressions over dimension
variables, as :func:`~jaxport.domain.symbolic.parse_shape_spec` reads them.
All the specs of one export are parsed in one :class:`SymbolicScope`, the one
that holds the ``--constraint``s, so that ``b`` in two specs is one variable.
This module knows neither JAX nor NumPy: the application turns an
:class:`ArraySpec` into a ``jax.ShapeDtypeStruct``.
"""

from __future__ import annotations

import re

from .errors import ArgSpecError
from .specs import ArraySpec
from .symbolic import DimExpr, ShapeSpecSyntaxError, SymbolicScope, parse_shape_spec

#: The short dtype names, and the NumPy names they stand for.
SHORT_DTYPES: dict[str, str] = {
    "bool": "bool", "pred": "bool",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "c64": "complex64", "c128": "complex128",
}
_FLOAT8 = ("float8_e4m3fn", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2",
           "float8_e5m2fnuz", "float8_e4m3", "float8_e3m4", "float8_e8m0fnu")
#: Every dtype name a spec may use (short or NumPy's).
DTYPES: frozenset[str] = frozenset({*SHORT_DTYPES, *SHORT_DTYPES.values(), *_FLOAT8,
                                    "int2", "int4", "uint2", "uint4", "float4_e2m1fn"})

_SPEC = re.compile(r"\s*(?P<dtype>[A-Za-z][A-Za-z0-9_]*)\s*\[(?P<dims>[^\[\]]*)\]\s*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_arg_spec(text: str, *, scope: SymbolicScope,
                   expr_class: type[DimExpr] = DimExpr) -> ArraySpec:
    """The :class:`ArraySpec` that ``text`` writes, with its variables in ``scope``.

    Args:
        text: ``DTYPE[DIMS]``, e.g. ``"f32[b,784]"``, ``"i32[]"``.
        scope: the scope of the symbolic dimensions (shared by all specs).
        expr_class: the class of the symbolic dimensions built.

    Raises:
        ArgSpecError: the dtype is unknown or the dimensions do not parse;
            the message quotes the spec.

    >>> scope = SymbolicScope(("b >= 2",))
    >>> parse_arg_spec("f32[b, 784]", scope=scope)
    ArraySpec(shape=(b, 784), dtype='float32', weak_type=False)
    >>> str(parse_arg_spec("bfloat16[2*b]", scope=scope)), str(parse_arg_spec("bool[]", scope=scope))
    ('bfloat16[2*b]', 'bool[]')
    >>> parse_arg_spec("f32", scope=scope)
    Traceback (most recent call last):
    ...
    jaxport.errors.ArgSpecError: array spec 'f32' is not DTYPE[DIMS], e.g. f32[b,784] or i32[]
    """
    match = _SPEC.fullmatch(text)
    if match is None:
        raise ArgSpecError(f"array spec {text!r} is not DTYPE[DIMS], e.g. f32[b,784] or i32[]")
    dtype = match["dtype"]
    if dtype not in DTYPES:
        known = ", ".join(sorted(SHORT_DTYPES))
        raise ArgSpecError(f"array spec {text!r}: unknown dtype {dtype!r} (use one of {known}, "
                           "or a NumPy name such as float32)")
    try:
        shape = parse_shape_spec(match["dims"], scope=scope, expr_class=expr_class)
    except ShapeSpecSyntaxError as exc:
        raise ArgSpecError(f"array spec {text!r}: {exc}") from exc
    for dim in shape:
        if isinstance(dim, int) and dim < 0:
            raise ArgSpecError(f"array spec {text!r}: dimension {dim} is negative")
    return ArraySpec(shape=shape, dtype=SHORT_DTYPES.get(dtype, dtype))


def parse_kwarg_spec(text: str, *, scope: SymbolicScope,
                     expr_class: type[DimExpr] = DimExpr) -> tuple[str, ArraySpec]:
    """The keyword and the spec of ``NAME=SPEC``, e.g. ``"mask=bool[b]"``.

    Raises:
        ArgSpecError: there is no ``=``, the name is not an identifier, or the
            spec does not parse.

    >>> parse_kwarg_spec("scale=f32[]", scope=SymbolicScope())
    ('scale', ArraySpec(shape=(), dtype='float32', weak_type=False))
    """
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or _NAME.fullmatch(name) is None:
        raise ArgSpecError(f"keyword spec {text!r} is not NAME=DTYPE[DIMS], e.g. scale=f32[]")
    return name, parse_arg_spec(spec, scope=scope, expr_class=expr_class)
