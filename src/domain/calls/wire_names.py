"""The wire names of a function's flat inputs and outputs, for every runtime target.

A converted directory names each flat array that a caller gives or gets:
a SavedModel signature's inputs and outputs, an ONNX graph's inputs and
outputs, a LiteRT signature's tensors, a model server's tensor names. One
rule serves them all, and it has an inverse (:func:`parse_wire_name`):

* inputs are the caller's arguments (a bundle's weights are not inputs):
  positional argument ``i`` is ``arg{i}``; a keyword argument is its
  keyword; a leaf inside an argument adds its key path, one segment per
  entry (a dict key, or a list's, tuple's or custom node's index in
  decimal), joined by ``/``: ``arg0``, ``arg1/dense/w``, ``arg0/0``,
  ``scale``;
* outputs: the leaves of a dict result are named by their key paths in the
  same way (``logits``, ``aux/loss``); any other result's leaves are
  ``output_0``, ``output_1``, ... in flattening order;
* a segment keeps the letters, digits, ``_`` and ``-``; any other character
  (``.``, ``/``, a space, non-ASCII) is written ``.XX`` per UTF-8 byte, in
  lowercase hex, and an empty entry is the lone ``.``; ``_`` or ``-`` at the
  start of a name, and a keyword that would read as a positional argument
  (``arg0``), get their first character escaped (``.5f``, ``.61``), so that
  every name starts with a letter, a digit or ``.`` (TensorFlow's rule) and
  two leaves never share a name.

Examples (``wire`` of the entries, and back):

============================  ===========================
key path                      wire name
============================  ===========================
``args[0]``                   ``arg0``
``args[1]['dense']['w']``     ``arg1/dense/w``
``kwargs['scale']``           ``scale``
``kwargs['_private']``        ``.5fprivate``
``args[0]['layer.0']``        ``arg0/layer.2e0``
``args[0]['a/b']``            ``arg0/a.2fb``
``args[0]['']``               ``arg0/.``
``kwargs['arg0']``            ``.61rg0``
result ``out['aux']['loss']`` ``aux/loss``
result ``out[1]``             ``output_1``
============================  ===========================

Every name is accepted by TensorFlow (letters, digits and ``_ . - /``, not
starting with ``_ - /``), ONNX, LiteRT and the KServe protocol as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .trees import TreeKind, TreeSpec

_KEPT = re.compile(r"[A-Za-z0-9_\-]")
#: A segment as :func:`escape_segment` writes it, and one of its escapes.
_SEGMENT = re.compile(r"(?:[A-Za-z0-9_\-]|\.[0-9a-f]{2})*")
_ESCAPED = re.compile(rb"\.([0-9a-f]{2})")
_POSITIONAL = re.compile(r"arg[0-9]+")
#: The escape character (TensorFlow accepts it first in a name).
ESCAPE = "."


def _escape_char(char: str) -> str:
    return "".join(f"{ESCAPE}{b:02x}" for b in char.encode("utf-8"))


def escape_segment(entry: str, *, first: bool = False) -> str:
    """One key-path entry as a segment of a wire name (``first``: it starts the name).

    >>> escape_segment("dense"), escape_segment("layer.0"), escape_segment(""), escape_segment("_x", first=True)
    ('dense', 'layer.2e0', '.', '.5fx')
    """
    if not entry:
        return ESCAPE
    out = "".join(c if _KEPT.fullmatch(c) else _escape_char(c) for c in entry)
    if first and entry[0] in "_-":
        out = _escape_char(entry[0]) + out[1:]
    return out


def unescape_segment(segment: str) -> str:
    """The entry of a segment written by :func:`escape_segment`.

    >>> unescape_segment("layer.2e0"), unescape_segment("."), unescape_segment(".5fx")
    ('layer.0', '', '_x')

    Raises:
        ValueError: ``segment`` is not one that :func:`escape_segment` writes.
    """
    if segment == ESCAPE:
        return ""
    if not _SEGMENT.fullmatch(segment):
        raise ValueError(f"{segment!r} is not a segment of a wire name: it holds other characters than letters, "
                         f"digits, '_', '-' and '{ESCAPE}' followed by two lowercase hex digits")
    data = _ESCAPED.sub(lambda m: bytes([int(m[1], 16)]), segment.encode("ascii"))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{segment!r}: the escaped bytes are not UTF-8") from exc


def wire_name(entries: Sequence[str | int]) -> str:
    """The wire name of one key path below the name's root (an input's argument or a dict result).

    The first entry of an input is its argument: an ``int`` (positional,
    ``arg{i}``) or a keyword (``str``).

    >>> wire_name([1, "dense", "w"]), wire_name(["scale"]), wire_name(["arg0"]), wire_name(["a", 0])
    ('arg1/dense/w', 'scale', '.61rg0', 'a/0')
    """
    if not entries:
        raise ValueError("a wire name needs at least one key-path entry")
    head, *rest = entries
    if isinstance(head, int):
        first = f"arg{head}"
    else:
        first = escape_segment(head, first=True)
        if _POSITIONAL.fullmatch(head):
            first = _escape_char(head[0]) + first[1:]
    return "/".join([first, *(str(e) if isinstance(e, int) else escape_segment(e) for e in rest)])


def parse_wire_name(name: str) -> tuple[str | int, ...]:
    """The key-path entries of a wire name: the inverse of :func:`wire_name`.

    Indices after the first segment come back as text (``"0"``): only the
    tree tells a list index from a dict key.

    >>> parse_wire_name("arg1/dense/w"), parse_wire_name(".61rg0"), parse_wire_name("arg0/layer.2e0")
    ((1, 'dense', 'w'), ('arg0',), (0, 'layer.0'))

    Raises:
        ValueError: ``name`` is not a wire name.
    """
    head, *rest = name.split("/")
    first: str | int = int(head[3:]) if _POSITIONAL.fullmatch(head) else unescape_segment(head)
    return (first, *(unescape_segment(s) for s in rest))


def input_wire_names(in_tree: TreeSpec) -> tuple[str, ...]:
    """The wire name of each flat input of a caller's ``(args, kwargs)`` tree (weights already left out).

    >>> leaf = TreeSpec.leaf()
    >>> tree = TreeSpec.of_tuple(TreeSpec.of_tuple(leaf, TreeSpec.of_dict({"dense": TreeSpec.of_dict(
    ...     {"w": leaf})})), TreeSpec.of_dict({"scale": leaf}))
    >>> input_wire_names(tree)
    ('arg0', 'arg1/dense/w', 'scale')
    """
    names = []
    for keys in in_tree.leaf_keys():
        side, *path = keys
        names.append(wire_name(path if side == 0 else [str(path[0]), *path[1:]]))
    return tuple(names)


def output_wire_names(out_tree: TreeSpec) -> tuple[str, ...]:
    """The wire name of each flat output: key paths for a dict result, else ``output_0``, ...

    >>> leaf = TreeSpec.leaf()
    >>> output_wire_names(TreeSpec.of_dict({"y": leaf, "aux": TreeSpec.of_tuple(leaf)}))
    ('aux/0', 'y')
    >>> output_wire_names(TreeSpec.of_tuple(leaf, leaf))
    ('output_0', 'output_1')
    """
    if out_tree.kind is TreeKind.DICT:
        return tuple(wire_name([str(k[0]), *k[1:]]) for k in out_tree.leaf_keys())
    return tuple(f"output_{i}" for i in range(out_tree.num_leaves))
