"""The list of bad calls and their messages that both of jaxport's fronts must give: Python and ``jaxport.mjs``.

Each case names a test model (:mod:`.web_models`, or ``shapes``: a
manifest alone, whose signature exercises every kind of shape check), a
function, and the named inputs of the call (wire name -> dtype and shape;
the values are zeros). The error's class and message are what jaxport's
Python front raises for the same call: ``jaxport.load_converted(DIR)[NAME]``
called with the same arguments (for ``shapes``, the same front,
``ConvertedCall``, on its manifest, with no runtime behind it).

``python -m tests.helpers.web_bad_calls`` writes ``tests/web/bad_calls.json``;
``tests/e2e/test_web_bad_calls.py`` checks that the committed file is what
Python raises today, and ``tests/web/*.test.mjs`` (``node --test``) and the
browser test check that ``jaxport.mjs`` throws the same.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from jaxport.domain.jax_docs import DocPages, pages_for
from jaxport.domain.artifact.record import AvalRecord, DType, TreeKind, TreeSpec
from jaxport.domain.symbolic.json_trees import constraint_scope, parse_dims, shape_trees
import jaxport
from jaxport.application.conversion.model import ConvertedCall
from jaxport.domain.calls.signature import Signature
from jaxport.domain.converted.manifest import ConvertedFunction, ConvertedManifest, Variant
from jaxport.domain.errors import JaxportError
from jaxport.domain.calls.wire_names import parse_wire_name

from .web_paths import BAD_CALLS


def _a(dtype: str, *shape: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": list(shape)}


#: (model, function, what, inputs).
CASES: list[tuple[str, str, str, dict[str, Any]]] = [
    ("gpt", "logits", "wrong dtype", {"arg0": _a("float32", 1, 4)}),
    ("gpt", "logits", "wrong rank", {"arg0": _a("int32", 4)}),
    ("gpt", "logits", "size outside a constraint", {"arg0": _a("int32", 1, 1025)}),
    ("gpt", "logits", "missing input", {}),
    ("gpt", "logits", "extra positional input", {"arg0": _a("int32", 1, 4), "arg1": _a("int32", 1, 4)}),
    ("gpt", "logits", "zero batch", {"arg0": _a("int32", 0, 4)}),
    ("mlp", "predict", "wrong constant dimension", {"arg0": _a("float32", 2, 15)}),
    ("mlp", "predict", "unknown keyword", {"arg0": _a("float32", 2, 16), "x": _a("float32", 2, 16)}),
    ("kw", "mix", "constraint b >= 2", {"arg0": _a("float32", 1, 4), "scale/a": _a("float32", 3)}),
    ("kw", "mix", "inconsistent variable", {"arg0": _a("float32", 2, 4), "scale/a": _a("float32", 4)}),
    ("kw", "mix", "missing keyword's leaf", {"arg0": _a("float32", 2, 4), "scale/b": _a("float32", 3)}),
    ("kw", "mix", "keyword missing", {"arg0": _a("float32", 2, 4)}),
    ("kw", "mix", "derived variable below 1", {"arg0": _a("float32", 2, 1), "scale/a": _a("float32", 0)}),
    ("dtypes", "step", "int64 given as int32", {"arg0": _a("int32", 3)}),
    ("dtypes", "half", "float16 given as float32", {"arg0": _a("float32", 2, 3)}),
    ("shapes", "solve", "division with a remainder", {"arg0": _a("float32", 2, 6), "opt/layer.2e0": _a("int32", 2, 3)}),
    ("shapes", "solve", "inconsistent derived variable", {"arg0": _a("float32", 2, 7), "opt/layer.2e0": _a("int32", 2, 3)}),
    ("shapes", "solve", "two-variable constraint", {"arg0": _a("float32", 9, 25), "opt/layer.2e0": _a("int32", 12, 3)}),
    ("shapes", "solve", "escaped key, wrong dtype", {"arg0": _a("float32", 2, 7), "opt/layer.2e0": _a("int64", 3, 3)}),
    ("shapes", "solve", "keyword key missing", {"arg0": _a("float32", 2, 7), "opt/layer0": _a("int32", 3, 3)}),
]


#: Dimensions whose printed form (Python's) ``jaxport.mjs`` must print from their trees alike.
DIMS = ("3*t*t + floordiv(b, -t)", "max(b, 2*t) - mod(b, 3)", "-h - b + 20", "t*b*2 + b", "min(t, 4)*b - 7",
        "t*t*t", "2*h + 1", "b")


def dims_printed() -> list[dict[str, Any]]:
    """Each of :data:`DIMS` as Python prints it and as the manifest's tree."""
    out = []
    for text in DIMS:
        (tree,), _ = shape_trees([text], [])
        out.append({"text": str(parse_dims([text], constraint_scope(()))[0]), "tree": tree})
    return out


def shapes_manifest() -> ConvertedManifest:
    """``shapes``: a manifest alone, ``solve(x: (b, 2*h + 1) float32, *, opt: {"layer.0": (h, 3) int32})``
    with ``b >= 2`` and ``b + h <= 20``."""
    leaf = TreeSpec.leaf()
    in_tree = TreeSpec.of_tuple(TreeSpec.of_tuple(leaf), TreeSpec.of_dict({"opt": TreeSpec.of_dict({"layer.0": leaf})}))
    sig = Signature("solve", in_tree, (AvalRecord(("b", "2*h + 1"), DType("float32")), AvalRecord(("h", "3"), DType("int32"))),
                    leaf, (AvalRecord(("b",), DType("float32")),), ("b >= 2", "b + h <= 20"))
    return ConvertedManifest("onnx", {}, (ConvertedFunction(sig, (Variant("solve.onnx"),)),))


def call_from_names(in_tree: TreeSpec, inputs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The ``(args, kwargs)`` that named inputs stand for (as ``jaxport.mjs`` reads them): a
    positional argument that the names skip is None; nested entries follow the exported tree."""
    args: dict[int, Any] = {}
    kwargs: dict[str, Any] = {}
    args_spec, kwargs_spec = in_tree.children
    for name, value in inputs.items():
        head, *rest = parse_wire_name(name)
        parent: Any = args if isinstance(head, int) else kwargs
        spec: TreeSpec | None = args_spec if isinstance(head, int) else kwargs_spec
        entries: list[Any] = [head, *rest]
        for i, entry in enumerate(entries):
            child = _child(spec, entry)
            key = int(entry) if spec is not None and spec.kind is not TreeKind.DICT and str(entry).isdigit() else entry
            if i == len(entries) - 1:
                parent[key] = value
            else:
                parent = parent.setdefault(key, {})
            spec = child
    return _tuple(args), {k: _plain(v, _child(kwargs_spec, k)) for k, v in kwargs.items()}


def _child(spec: TreeSpec | None, entry: Any) -> TreeSpec | None:
    if spec is None or spec.kind is TreeKind.LEAF:
        return None
    if spec.kind is TreeKind.DICT:
        return spec.children[spec.children_names.index(entry)] if entry in spec.children_names else None
    index = int(entry) if str(entry).isdigit() else -1
    return spec.children[index] if 0 <= index < len(spec.children) else None


def _tuple(items: dict[int, Any]) -> tuple[Any, ...]:
    return tuple(items.get(i) for i in range(max(items) + 1)) if items else ()


def _plain(value: Any, spec: TreeSpec | None) -> Any:
    if not isinstance(value, dict):
        return value
    if spec is not None and spec.kind in (TreeKind.LIST, TreeKind.TUPLE, TreeKind.CUSTOM) and all(isinstance(k, int) for k in value):
        items = _tuple(value)
        return [_plain(v, _child(spec, i)) for i, v in enumerate(items)] if spec.kind is TreeKind.LIST else \
            tuple(_plain(v, _child(spec, i)) for i, v in enumerate(items))
    return {k: _plain(v, _child(spec, k)) for k, v in value.items()}


class _NoRuntime:
    """The runtime behind ``shapes``' front: a bad call never reaches it."""

    def run(self, function: str, variant: Variant, args: Any) -> list[Any]:
        raise AssertionError(f"the call of {function} passed jaxport's checks")


def python_error(call: Callable[..., Any], function: ConvertedFunction, inputs: dict[str, Any]) -> tuple[str, str]:
    """The class and message of what ``call`` (a converted directory's function) raises for the named
    inputs (zeros of each given dtype and shape)."""
    arrays = {n: np.zeros(a["shape"], a["dtype"]) for n, a in inputs.items()}
    args, kwargs = call_from_names(function.signature.in_tree, arrays)
    try:
        call(*args, **kwargs)
    except JaxportError as exc:
        return type(exc).__name__, str(exc)
    raise AssertionError(f"the call {inputs} of {function.name} passed jaxport's checks")


def pages_without_jax(message: str) -> str:
    """``message`` citing JAX's pages as a process without JAX does (``jaxport.mjs``'s case): this
    process may have imported a JAX that cites them at its own, older addresses."""
    older, now = pages_for((0, 10)), DocPages()
    return message.replace(older.export, now.export).replace(older.shape_poly, now.shape_poly)


def bad_calls(directories: dict[str, Path]) -> dict[str, Any]:
    """The shared list, for the models converted into ``directories`` (``shapes`` added)."""
    models = {name: jaxport.load_converted(path) for name, path in directories.items()}
    shapes = shapes_manifest().function("solve")
    calls = []
    for model, function, what, inputs in CASES:
        if model == "shapes":
            error, message = python_error(ConvertedCall(shapes, _NoRuntime()), shapes, inputs)
        else:
            error, message = python_error(models[model][function], models[model].functions[function], inputs)
        calls.append({"model": model, "function": function, "what": what, "inputs": inputs,
                      "error": error, "message": pages_without_jax(message)})
    return {"about": "Bad calls and the error jaxport's Python front raises for each; jaxport.mjs must throw the "
                     "same. Written by python -m tests.helpers.web_bad_calls; do not edit.",
            "shapes_manifest": json.loads(shapes_manifest().to_json()), "dims": dims_printed(), "calls": calls}


def main() -> None:
    """Writes ``tests/web/bad_calls.json`` from the test models converted in a temporary directory."""
    from .web_models import build

    with tempfile.TemporaryDirectory() as tmp:
        built = build(Path(tmp), ("mlp", "gpt", "kw", "dtypes"))
        BAD_CALLS.write_text(json.dumps(bad_calls(built), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {BAD_CALLS}", file=sys.stderr)


if __name__ == "__main__":
    main()
