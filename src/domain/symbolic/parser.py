"""Parsing symbolic shape specifications and constraints.

Grammar (the one ``jax.export.symbolic_shape`` accepts)::

    shape  := "(" shape ")" | [dim ("," dim)* [","]]
    dim    := "_" | "..." | expr
    expr   := term (("+" | "-") term)*
    term   := unary ("*" unary)*
    unary  := ("-" | "+") unary | power
    power  := atom ["^" NUMBER]
    atom   := NUMBER | NAME | OP "(" expr "," expr ")"     OP: floordiv mod max min

``_`` takes the dimension from ``like``; ``...`` (last) takes the remaining
dimensions from ``like``. Errors quote the spec and the position.
"""

from __future__ import annotations

import operator
import re
import token
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

from .core import FLOORDIV, MAX, MIN, MOD
from jaxport.domain.errors import ConstraintError, ShapeSpecSyntaxError
from .expr import DimExpr, DimSize, Scope, dim_max, dim_min


_TOKEN_RE: Final = re.compile(
    r"(?P<space>\s+)|(?P<ELLIPSIS>\.\.\.)|(?P<NUMBER>\d\w*(?:\.\w*)?)|(?P<NAME>[^\W\d]\w*)"
    r"|(?P<OP>\*\*|//|>=|<=|==|[-+*^,()%/<>=.])|(?P<ERRORTOKEN>.)"
)
#: An operator's token kind, as Python's tokenizer (which JAX's parser uses) names it: ``STAR`` for ``*``.
_OP_NAMES: Final = {text: token.tok_name[kind] for text, kind in token.EXACT_TOKEN_TYPES.items()}
_OPERATIONS: Final[dict[str, Callable[[DimSize, DimSize], DimSize]]] = {
    FLOORDIV: operator.floordiv, MOD: operator.mod, MAX: dim_max, MIN: dim_min}
_RELATIONS: Final = {"GREATEREQUAL": ">=", "LESSEQUAL": "<=", "EQEQUAL": "=="}
_INTEGER_RE: Final = re.compile(r"\d+(?:_\d+)*")
_OPERAND_START: Final = ("NAME", "MINUS", "NUMBER")


class _Token(NamedTuple):
    kind: str
    text: str
    start: int


def _tokenize(text: str) -> list[_Token]:
    tokens = []
    for match in _TOKEN_RE.finditer(text):
        kind = match.lastgroup or "ERRORTOKEN"
        if kind == "space":
            continue
        value = match.group()
        tokens.append(_Token(_OP_NAMES[value] if kind == "OP" else kind, value, match.start()))
    tokens.append(_Token("ENDMARKER", "", len(text)))
    return tokens


class _Parser:
    """Recursive descent over the tokens of ``text``, building dimensions in ``scope``."""

    def __init__(self, text: str, scope: Scope, expr_class: type[DimExpr]) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0
        self.scope = scope
        self.expr_class = expr_class
        self.dimension = 0

    @property
    def token(self) -> _Token:
        return self.tokens[self.pos]

    def error(self, reason: str, token: _Token | None = None) -> ShapeSpecSyntaxError:
        where = (token or self.token).start
        return ShapeSpecSyntaxError(self.text, self.dimension, reason, where)

    def unexpected(self, *expected: str) -> ShapeSpecSyntaxError:
        listing = ", ".join(expected)
        return self.error(f"expecting one of {{{listing}}} but found {self.token.kind}")

    def expect(self, kind: str) -> _Token:
        token = self.token
        if token.kind != kind:
            raise self.unexpected(kind)
        self.pos += 1
        return token

    def accept(self, *kinds: str) -> _Token | None:
        token = self.token
        if token.kind in kinds:
            self.pos += 1
            return token
        return None

    # ---- expressions -----------------------------------------------------------

    def expr(self) -> DimSize:
        value = self.term()
        while (op := self.accept("PLUS", "MINUS")) is not None:
            right = self.term()
            value = value + right if op.kind == "PLUS" else value - right
        return value

    def term(self) -> DimSize:
        value = self.unary()
        while self.accept("STAR") is not None:
            value = value * self.unary()
        return value

    def unary(self) -> DimSize:
        if self.accept("MINUS") is not None:
            return -self.unary()
        if self.accept("PLUS") is not None:
            return self.unary()
        return self.power()

    def power(self) -> DimSize:
        base = self.atom()
        if self.accept("CIRCUMFLEX") is None:
            return base
        exponent = self.integer(self.expect("NUMBER"))
        result: DimSize = 1
        for _ in range(exponent):
            result = result * base
        return result

    def integer(self, token: _Token) -> int:
        if not _INTEGER_RE.fullmatch(token.text):
            raise self.error(f"expecting integer, found {token.text}", token)
        return int(token.text.replace("_", ""))

    def atom(self) -> DimSize:
        token = self.token
        if token.kind == "NUMBER":
            self.pos += 1
            return self.integer(token)
        if token.kind != "NAME":
            raise self.unexpected(*_OPERAND_START)
        if token.text == "_":
            raise self.error("the placeholder '_' must be a whole dimension")
        self.pos += 1
        operation = _OPERATIONS.get(token.text)
        if operation is None:
            return self.expr_class.variable(token.text, self.scope)
        self.expect("LPAR")
        left = self.expr()
        self.expect("COMMA")
        right = self.expr()
        closing = self.expect("RPAR")
        try:
            return operation(left, right)
        except ZeroDivisionError:
            raise self.error(f"division by zero in {token.text}", closing) from None

    # ---- shapes ----------------------------------------------------------------

    def shape(self, like: Sequence[int | None] | None) -> tuple[DimSize, ...]:
        if self.token.kind == "LPAR" and self._parenthesized():
            self.pos += 1
            inner = self.shape(like)
            self.expect("RPAR")
            return inner
        dims: list[DimSize] = []
        while self.token.kind not in ("ENDMARKER", "RPAR"):
            self.dimension = len(dims)
            if self.dim(dims, like):
                break
            if self.accept("COMMA") is None:
                if self.token.kind in ("ENDMARKER", "RPAR"):
                    break
                raise self.unexpected("COMMA", "PLUS", "MINUS", "STAR")
        return tuple(dims)

    def _parenthesized(self) -> bool:
        """Whether the LPAR at the cursor opens the whole (rest of the) shape."""
        depth = 0
        for i in range(self.pos, len(self.tokens)):
            kind = self.tokens[i].kind
            depth += kind == "LPAR"
            depth -= kind == "RPAR"
            if depth == 0:
                return self.tokens[i + 1].kind in ("ENDMARKER", "RPAR")
        return True  # unbalanced: expect("RPAR") reports it

    def dim(self, dims: list[DimSize], like: Sequence[int | None] | None) -> bool:
        """Parses one dimension into ``dims``; True after ``...`` (which ends the shape)."""
        token = self.token
        if token.kind == "ELLIPSIS":
            self.placeholder_rest(dims, like, token)
            return True
        if token.kind == "NAME" and token.text == "_":
            self.pos += 1
            dims.append(self.placeholder_at(len(dims), like, token, "_"))
            return False
        value = self.expr()
        if isinstance(value, int) and like is not None and len(dims) < len(like) and value != like[len(dims)]:
            raise self.error(f"different size {value} for known dimension; like={tuple(like)}", token)
        dims.append(value)
        return False

    def placeholder_at(
        self, index: int, like: Sequence[int | None] | None, token: _Token, name: str
    ) -> int:
        if like is None:
            raise self.error(f"spec contains {name} but no 'like' shape was given", token)
        if index >= len(like):
            raise self.error(
                f"cannot resolve placeholder '{name}' because we parsed {index} already "
                f"and 'like' shape has only {len(like)} dimensions", token)
        value = like[index]
        if value is None:
            raise self.error(f"unexpected placeholder for unknown dimension; like={tuple(like)}", token)
        return value

    def placeholder_rest(
        self, dims: list[DimSize], like: Sequence[int | None] | None, token: _Token
    ) -> None:
        self.pos += 1
        self.accept("COMMA")
        if self.token.kind not in ("ENDMARKER", "RPAR"):
            raise self.error("'...' must be the last dimension of the shape")
        if like is None:
            raise self.error("spec contains ... but no 'like' shape was given", token)
        if len(dims) > len(like):
            raise self.error(
                f"cannot resolve placeholder '...' because we parsed {len(dims)} already "
                f"and 'like' shape has only {len(like)} dimensions", token)
        for index in range(len(dims), len(like)):
            dims.append(self.placeholder_at(index, like, token, "..."))


def parse_shape(
    spec: str,
    *,
    scope: Scope,
    like: Sequence[int | None] | None = None,
    expr_class: type[DimExpr] = DimExpr,
) -> tuple[DimSize, ...]:
    """Parses a symbolic shape in ``scope``; :func:`~.scope.parse_shape_spec` is the public
    entry (it makes the scope when none is given).

    >>> from jaxport.domain.symbolic import SymbolicScope
    >>> parse_shape("(2*w, w + 1)", scope=SymbolicScope(["w >= 2"]))
    (2*w, w + 1)

    Raises:
        ShapeSpecSyntaxError: the spec is malformed; the message quotes the spec
            and the position of the offending token.
    """
    parser = _Parser(spec, scope, expr_class)
    dims = parser.shape(like)
    if parser.token.kind != "ENDMARKER":
        parser.dimension = len(dims)
        raise parser.unexpected("ENDMARKER")
    return dims


def parse_constraint(
    text: str, *, scope: Scope, expr_class: type[DimExpr] = DimExpr
) -> tuple[DimSize, str, DimSize]:
    """Parses ``"e1 >= e2"``, ``"e1 <= e2"`` or ``"e1 == e2"`` into ``(e1, relation, e2)``.

    Raises:
        ConstraintError: there is not exactly one relation.
        ShapeSpecSyntaxError: a side does not parse.
    """
    parser = _Parser(text, scope, expr_class)
    relations = [t for t in parser.tokens if t.kind in _RELATIONS or t.kind in ("LESS", "GREATER")]
    if len(relations) != 1 or relations[0].kind not in _RELATIONS:
        raise ConstraintError(
            f"Constraint parsing error: must contain one of '==' or '>=' or '<=': {text!r}")
    left = parser.expr()
    relation = parser.token
    if relation is not relations[0]:
        raise parser.unexpected("PLUS", "MINUS", "STAR", relations[0].kind)
    parser.pos += 1
    right = parser.expr()
    if parser.token.kind != "ENDMARKER":
        raise parser.unexpected("PLUS", "MINUS", "STAR", "ENDMARKER")
    return left, _RELATIONS[relation.kind], right
