"""How a SavedModel that jaxport writes names its signatures' inputs and outputs.

The naming is stable (a serving client's requests depend on it):

* inputs are the caller's arguments (a bundle's weights are not inputs),
  counted from 0: positional arguments are ``arg0``, ``arg1``, ...; keyword
  arguments are named by their keyword; a leaf inside an argument adds its
  key path, each entry escaped as bundle key paths are (``~`` as ``~0``,
  ``/`` as ``~1``, an empty entry as ``~e``; see
  :mod:`jaxport.domain.bundle_names`) and joined by ``/``: ``arg1/dense/w``,
  ``arg0/0`` (a list's or tuple's first element);
* outputs: the leaves of a dict result are named by their key paths in the
  same way (``logits``, ``aux/loss``); any other result's leaves are
  ``output_0``, ``output_1``, ... in flattening order;
* TensorFlow accepts names of the letters, digits and ``_ . - / >``, not
  starting with ``_ - / >``: any other character becomes ``_``, and a name
  that would start badly gets the prefix ``x``. Two leaves that end up with
  one name are refused at conversion (:class:`ConversionError`), as is a
  function name that cannot name a signature.

Signatures are named after their functions; ``serving_default`` is the
function named as the default, or the only one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .artifact import TreeKind, TreeSpec
from .bundle_names import escape_entry
from .errors import ConversionError

#: What the converter names its refusals' target.
SAVEDMODEL = "a TensorFlow SavedModel"
#: The signature TensorFlow Serving calls when a request names none.
DEFAULT_SIGNATURE = "serving_default"

_REFUSED = re.compile(r"[^A-Za-z0-9_.\-/>]")
_FIRST = re.compile(r"[A-Za-z0-9.]")


def tf_name(name: str) -> str:
    """``name`` as TensorFlow accepts it (see the module's docstring).

    >>> tf_name("arg1/dense/w"), tf_name("a~1b"), tf_name("_private"), tf_name("")
    ('arg1/dense/w', 'a_1b', 'x_private', 'x')
    """
    escaped = _REFUSED.sub("_", name)
    return escaped if _FIRST.match(escaped) else "x" + escaped


def _leaf_names(spec: TreeSpec, prefix: str) -> list[str]:
    """The key-path names of ``spec``'s leaves below ``prefix`` ("" at the root), in flattening order."""
    names: list[str] = []
    pending: list[tuple[TreeSpec, str]] = [(spec, prefix)]
    while pending:
        node, path = pending.pop()
        if node.kind is TreeKind.LEAF:
            names.append(path)
            continue
        entries = (node.children_names if node.kind is TreeKind.DICT
                   else [str(i) for i in range(len(node.children))])
        children = [(child, f"{path}/{escape_entry(e)}" if path else escape_entry(e))
                    for child, e in zip(node.children, entries)]
        pending.extend(reversed(children))
    return names


def input_names(function: str, in_tree: TreeSpec) -> tuple[str, ...]:
    """The name of each flat input of the caller's ``(args, kwargs)`` tree.

    >>> leaf = TreeSpec.leaf()
    >>> tree = TreeSpec.of_tuple(TreeSpec.of_tuple(leaf, TreeSpec.of_dict({"dense": TreeSpec.of_dict(
    ...     {"w": leaf})})), TreeSpec.of_dict({"scale": leaf}))
    >>> input_names("f", tree)
    ('arg0', 'arg1/dense/w', 'scale')

    Raises:
        ConversionError: two leaves get one name.
    """
    args, kwargs = in_tree.children
    names: list[str] = []
    for i, arg in enumerate(args.children):
        names.extend(_leaf_names(arg, f"arg{i}"))
    for keyword, arg in zip(kwargs.children_names, kwargs.children):
        names.extend(_leaf_names(arg, escape_entry(keyword)))
    return _unique(function, "input", [tf_name(n) for n in names])


def output_names(function: str, out_tree: TreeSpec) -> tuple[str, ...]:
    """The name of each flat output: key paths for a dict result, else ``output_0``, ...

    >>> leaf = TreeSpec.leaf()
    >>> output_names("f", TreeSpec.of_dict({"y": leaf, "aux": TreeSpec.of_tuple(leaf)}))
    ('aux/0', 'y')
    >>> output_names("f", TreeSpec.of_tuple(leaf, leaf))
    ('output_0', 'output_1')

    Raises:
        ConversionError: two leaves get one name.
    """
    if out_tree.kind is TreeKind.DICT:
        names = [tf_name(n) for n in _leaf_names(out_tree, "")]
    else:
        names = [f"output_{i}" for i in range(out_tree.num_leaves)]
    return _unique(function, "output", names)


def _unique(function: str, side: str, names: Sequence[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ConversionError(SAVEDMODEL, function, f"two {side}s get the name '{name}' (the naming "
                                  "escapes characters TensorFlow refuses as '_'): rename a key", where=name)
        seen.add(name)
    return tuple(names)


def signature_name(function: str) -> str:
    """The signature of ``function`` (its name, which a bundle has already checked).

    Raises:
        ConversionError: the name is not one TensorFlow accepts as is, or is
            the default signature's.
    """
    if function == DEFAULT_SIGNATURE or tf_name(function) != function:
        raise ConversionError(SAVEDMODEL, function, "the name cannot name a signature: use letters, "
                              f"digits and '_ . -', and not {DEFAULT_SIGNATURE!r}")
    return function
