"""The names in a bundle: of its weights and golden examples' arrays (key paths as text, by the rule of
:mod:`jaxport.domain.leaf_names`), of its functions' files.

Names are for people and other tools (the safetensors file is keyed by
them); the bundle rebuilds the pytree from its recorded structure and the
leaves' order, not by parsing names. Nothing here reads files or knows JAX.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jaxport.domain.artifact.record import TreeSpec
from jaxport.domain.errors import BundleError
from jaxport.domain.leaf_names import weight_name

#: The key that safetensors reserves for its free-form metadata.
RESERVED_WEIGHT_NAME = "__metadata__"
_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")


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
