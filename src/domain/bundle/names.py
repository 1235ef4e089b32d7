"""The names in a bundle: of its weights (key paths as text), of its functions' files.

A weight is named by its key path in the weights pytree: the path's entries
(a dict key, a list or tuple index, a namedtuple field, a custom node's key),
each as text, joined by ``/``: ``{"dense": {"w": ...}}`` names its leaf
``dense/w``, ``{"layers": [{"b": ...}]}`` names it ``layers/0/b``. So that
names stay unambiguous whatever the keys hold, an entry escapes ``~`` as
``~0`` and ``/`` as ``~1`` (as JSON Pointer does), and an empty entry is
written ``~e``: the key ``"a/b"`` gives ``a~1b``, distinct from the path
``a`` then ``b``. A leaf at the root (the weights are one array) is named
``""``. So names and key paths correspond one to one. Names are for people
and other tools (the safetensors file is keyed by them); the bundle rebuilds
the pytree from its recorded structure and the leaves' order, not by
parsing names.

Nothing here reads files or knows JAX (the adapters turn JAX's key entries
into the texts used here).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jaxport.domain.artifact.record import TreeSpec
from jaxport.domain.errors import BundleError

#: The key that safetensors reserves for its free-form metadata.
RESERVED_WEIGHT_NAME = "__metadata__"
_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


def escape_entry(entry: str) -> str:
    """One key-path entry as it appears in a name.

    >>> escape_entry("a/b~c"), escape_entry("")
    ('a~1b~0c', '~e')
    """
    return entry.replace("~", "~0").replace("/", "~1") if entry else "~e"


def unescape_entry(text: str) -> str:
    """The key-path entry that :func:`escape_entry` wrote as ``text``.

    >>> unescape_entry("a~1b~0c"), unescape_entry("~e")
    ('a/b~c', '')
    """
    return text.replace("~1", "/").replace("~0", "~") if text != "~e" else ""


def weight_name(entries: Sequence[str]) -> str:
    """The name of the leaf at key path ``entries``.

    >>> weight_name(["layers", "0", "w"])
    'layers/0/w'
    """
    return "/".join(escape_entry(e) for e in entries)


def name_entries(name: str) -> tuple[str, ...]:
    """The key-path entries of a weight name (the inverse of :func:`weight_name`).

    >>> name_entries("dense/a~1b")
    ('dense', 'a/b')
    """
    if name == "":
        return ()
    return tuple(unescape_entry(part) for part in name.split("/"))


def check_weight_names(names: Sequence[str]) -> None:
    """Checks that the weights' names are distinct and usable as safetensors keys.

    Raises:
        BundleError: two leaves have the same name, or a leaf is named
            ``__metadata__``.
    """
    seen: set[str] = set()
    for name in names:
        if name == RESERVED_WEIGHT_NAME:
            raise BundleError(f"The weight at key path '{name}' cannot be saved: safetensors "
                              "reserves that name for its metadata. Rename that key.")
        if name in seen:
            raise BundleError(f"Two weights have the key path '{name}': give the pytree nodes "
                              "keys that tell their children apart.")
        seen.add(name)


def function_file(name: str) -> str:
    """The file of function ``name`` in a bundle, after checking the name.

    >>> function_file("predict")
    'predict.jaxport'

    Raises:
        BundleError: the name is empty, starts with a dot or ``-``, or holds
            characters other than letters, digits, ``_``, ``.`` and ``-``.
    """
    if not _FUNCTION_NAME.fullmatch(name):
        raise BundleError(f"The function name {name!r} cannot name a file in a bundle: use "
                          "letters, digits, '_', '.' and '-', not starting with '.' or '-'.")
    return f"{name}.jaxport"


def example_names(function: str, index: int, in_tree: TreeSpec, out_tree: TreeSpec
                  ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names of a golden example's inputs and outputs in ``examples.safetensors``.

    Each is a key path as the weights' are, below the function's name and the
    example's index: an input's path in the caller's ``args`` or ``kwargs``,
    an output's in the result (``out`` for a lone array).

    Args:
        function: the function's name in the bundle.
        index: the example's place among the function's examples.
        in_tree: the caller's ``(args, kwargs)`` (without the weights).
        out_tree: the result's structure.

    >>> leaf = TreeSpec.leaf()
    >>> example_names("predict", 0, TreeSpec.of_tuple(TreeSpec.of_tuple(leaf), TreeSpec.of_dict({"y": leaf})),
    ...               TreeSpec.of_dict({"a/b": leaf}))
    (('predict/0/args/0', 'predict/0/kwargs/y'), ('predict/0/out/a~1b',))
    """
    inputs = tuple(weight_name([function, str(index), "args" if keys[0] == 0 else "kwargs",
                                *(str(k) for k in keys[1:])]) for keys in in_tree.leaf_keys())
    outputs = tuple(weight_name([function, str(index), "out", *(str(k) for k in keys)])
                    for keys in out_tree.leaf_keys())
    return inputs, outputs
