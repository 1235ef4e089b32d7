"""The name of a pytree leaf from its key path: a bundle's weights and examples, a generation cache's leaves.

A leaf is named by its key path: the path's entries (a dict key, a list or
tuple index, a namedtuple field, a custom node's key), each as text, joined
by ``/``: ``{"dense": {"w": ...}}`` names its leaf ``dense/w``,
``{"layers": [{"b": ...}]}`` names it ``layers/0/b``. So that names stay
unambiguous whatever the keys hold, an entry escapes ``~`` as ``~0`` and
``/`` as ``~1`` (as JSON Pointer does), and an empty entry is written
``~e``: the key ``"a/b"`` gives ``a~1b``, distinct from the path ``a`` then
``b``. A leaf at the root (the tree is one array) is named ``""``. So names
and key paths correspond one to one. Nothing here knows JAX (the adapters
turn JAX's key entries into the texts used here).
"""

from __future__ import annotations

from collections.abc import Sequence


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
