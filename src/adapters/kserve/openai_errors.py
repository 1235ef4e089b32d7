"""A request body that fails :mod:`.openai_schema`, said in the words of OpenAI's own API: :func:`invalid_body`.

OpenAI answers ``Invalid 'temperature': decimal above maximum value. Expected a
value <= 2, but got 3 instead.``, ``Missing required parameter: 'model'.``,
``Unrecognized request argument supplied: foo``; pydantic's own messages
(``Input should be less than or equal to 2``) would say the wrong thing of a
NaN, and name pydantic's union branches (``prompt.list[int]``) as fields.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

_BOUNDS = {"greater_than_equal": ("below minimum", ">=", "ge"), "greater_than": ("below minimum", ">", "gt"),
           "less_than_equal": ("above maximum", "<=", "le"), "less_than": ("above maximum", "<", "lt")}
_KINDS = {"int": "an integer", "float": "a decimal", "string": "a string", "bool": "a boolean", "list": "an array",
          "model": "an object", "dict": "an object", "literal": "one of the values listed"}


def _param(loc: Sequence[int | str], fields: Sequence[str]) -> str:
    """The parameter's path, without pydantic's union branches (``prompt.list[int].0`` is ``prompt[0]``)."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not path or part in fields or part.isidentifier() and "[" not in part and part not in _TAGS:
            path += f".{part}" if path else part
    return path


#: Union branches pydantic names in an error's location.
_TAGS = {"str", "int", "float", "bool", "none", "list", "dict"}


def _shown(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # nan, inf: what the client sent
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _typeof(value: Any) -> str:
    return ("a string" if isinstance(value, str) else "a boolean" if isinstance(value, bool) else
            "an integer" if isinstance(value, int) else "a decimal" if isinstance(value, float) else
            "an array" if isinstance(value, list) else "an object" if isinstance(value, dict) else "null")


def _one(error: Any, fields: Sequence[str]) -> tuple[str, str]:
    """One error of pydantic's as OpenAI says it, and the parameter it names."""
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    param = _param(error["loc"], fields)
    if kind == "missing":
        return f"Missing required parameter: '{param}'.", param
    if kind == "extra_forbidden":
        return f"Unrecognized request argument supplied: {param}", param
    if kind in _BOUNDS:
        where, sign, key = _BOUNDS[kind]
        bound = ctx.get(key)
        number = "decimal" if isinstance(bound, float) else "integer"
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return (f"Invalid '{param}': {number} {where} value. Expected a value {sign} {bound}, but got "
                f"{_shown(value)} instead.", param)
    if kind == "finite_number":
        return f"Invalid '{param}': expected a finite number, but got {_shown(value)} instead.", param
    if kind == "too_short":
        return (f"Invalid '{param}': empty array. Expected an array with minimum length "
                f"{ctx.get('min_length')}, but got an empty array instead.", param)
    if kind == "literal_error":
        return f"Invalid '{param}': expected {ctx.get('expected')}, but got {_shown(value)} instead.", param
    if kind == "json_invalid":
        return f"We could not parse the JSON body of your request: {error['msg']}.", ""
    if kind.endswith("_type") or kind.endswith("_parsing"):
        wanted = _KINDS.get(kind.split("_")[0], kind.split("_")[0])
        return f"Invalid type for '{param}': expected {wanted}, but got {_typeof(value)} instead.", param
    return f"Invalid '{param}': {error['msg']}.", param


def invalid_body(exc: ValidationError, fields: Sequence[str]) -> tuple[str, str | None]:
    """The message of a body that failed validation (its first error, as OpenAI says one), and the parameter
    it names (None: the body as a whole). ``fields``: the request's field names.

    A field given a value of the wrong type for each branch of a union (``prompt``: a text or token ids)
    is said once, naming the types it takes.
    """
    errors = exc.errors()
    top = errors[0]["loc"][:1]
    same = [e for e in errors if e["loc"][:1] == top]
    first = max(same, key=lambda e: len(_param(e["loc"], fields)))  # inside the value rather than of its type
    param = _param(first["loc"], fields)
    union = [e for e in same if _param(e["loc"], fields) == param and len(e["loc"]) > 1]
    if len(union) > 1 and all(e["type"].endswith("_type") for e in union):
        wanted = " or ".join(dict.fromkeys(_KINDS.get(e["type"].split("_")[0], e["type"]) for e in union))
        return (f"Invalid type for '{param}': expected {wanted}, but got {_typeof(first.get('input'))} "
                "instead.", param)
    message, named = _one(first, fields)
    return message, named or None
