"""The text of an artifact's call signature: ``(float32[b,4], scale=float32[]) -> float32[b]``.

Rendered from the record's trees and avals, each leaf as ``dtype[shape]``. For
output meant to be read on a terminal, two options keep the text short
however large the model: a subtree given as ``named`` (a bundle's weights) is
shown as one token, ``<params: 148 arrays>``; and with ``width``, containers
are shown by their number of leaves, ``{...144 arrays}``, from the deepest
level up until the text fits, and the text is cut if even that is too long.

>>> from .record import ArtifactRecord, AvalRecord, DType, TreeSpec
>>> w = TreeSpec.of_dict({"b": TreeSpec.leaf(), "w": TreeSpec.leaf()})
>>> avals = (AvalRecord(("3",), DType.FLOAT32), AvalRecord(("4", "3"), DType.FLOAT32),
...          AvalRecord(("n", "4"), DType.FLOAT32))
>>> record = ArtifactRecord(
...     function_name="f", in_tree=TreeSpec.of_tuple(TreeSpec.of_tuple(
...         TreeSpec.of_dict({"dense": w}), TreeSpec.leaf()), TreeSpec.of_dict({})),
...     in_avals=avals, out_tree=TreeSpec.leaf(), out_avals=(AvalRecord(("n", "3"), DType.FLOAT32),),
...     in_shardings=(None,) * 3, out_shardings=(None,), nr_devices=1, platforms=("cpu",),
...     ordered_effects=(), unordered_effects=(), disabled_checks=(), mlir_module_serialized=b"",
...     calling_convention_version=10, module_kept_var_idx=(0, 1, 2), uses_global_constants=True)
>>> signature_text(record)
"({'dense': {'b': float32[3], 'w': float32[4,3]}}, float32[n,4]) -> float32[n,3]"
>>> signature_text(record, width=50)
'({...2 arrays}, float32[n,4]) -> float32[n,3]'
>>> signature_text(record, named=NamedTree("params", TreeSpec.of_dict({"dense": w}),
...                                        ("float32[3]", "float32[4,3]")))
'(<params: 2 arrays>, float32[n,4]) -> float32[n,3]'
"""

from __future__ import annotations

from dataclasses import dataclass

from .record import ArtifactRecord, AvalRecord, TreeKind, TreeSpec


@dataclass(frozen=True, slots=True)
class NamedTree:
    """A subtree that a signature shows as one token, such as a bundle's weights argument.

    Attributes:
        name: the token (``params``).
        tree: the subtree's structure.
        leaves: the text of each of its leaves (``float32[4,3]``), in order.
    """

    name: str
    tree: TreeSpec
    leaves: tuple[str, ...]


def signature_text(record: ArtifactRecord, *, named: NamedTree | None = None,
                   width: int | None = None) -> str:
    """``(args...) -> results`` with ``dtype[shape]`` leaves.

    Args:
        record: the artifact.
        named: a subtree to show as ``<name: N arrays>`` wherever it occurs
            (same structure and same leaves).
        width: the most characters the text may have; None for the whole text.
    """
    text = _Signature(record, named, None).text()
    if width is None or len(text) <= width:
        return text
    for depth in range(_container_depth(record) - 1, -2, -1):
        text = _Signature(record, named, depth).text()
        if len(text) <= width:
            return text
    return text[:max(width - 3, 0)] + "..."


def arrays(n: int) -> str:
    """``"1 array"``, ``"2 arrays"``."""
    return "1 array" if n == 1 else f"{n} arrays"


def parameters(record: ArtifactRecord) -> tuple[tuple[TreeSpec, ...], TreeSpec | None]:
    """The positional parameters and the keyword arguments' dict node of the input tree.

    ``((), None)`` when the input tree is not an ``(args, kwargs)`` pair.
    """
    tree = record.in_tree
    if tree.kind is TreeKind.TUPLE and len(tree.children) == 2:
        return tree.children[0].children, tree.children[1]
    return (), None


def _container_depth(record: ArtifactRecord) -> int:
    """The depth of the deepest container, counting each parameter and the result as depth 0."""
    args, kwargs = parameters(record)
    roots = [*args, *kwargs.children] if kwargs is not None else [record.in_tree]
    pending = [(root, 0) for root in (*roots, record.out_tree)]
    deepest = -1
    while pending:
        node, depth = pending.pop()
        if node.kind not in (TreeKind.LEAF, TreeKind.NONE):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in node.children)
    return deepest


class _Signature:
    """One rendering, with containers below ``limit`` (None: none) shown by their leaf count."""

    def __init__(self, record: ArtifactRecord, named: NamedTree | None, limit: int | None) -> None:
        self._record, self._named, self._limit = record, named, limit

    def text(self) -> str:
        record = self._record
        args, kwargs = parameters(record)
        ins = _Leaves(record.in_avals)
        if kwargs is None:
            inputs = self._node(record.in_tree, ins, 0)
        else:
            parts = [self._node(child, ins, 0) for child in args]
            parts += [f"{name}={self._node(child, ins, 0)}"
                      for name, child in zip(kwargs.children_names, kwargs.children)]
            inputs = f"({', '.join(parts)})"
        return f"{inputs} -> {self._node(record.out_tree, _Leaves(record.out_avals), 0)}"

    def _node(self, spec: TreeSpec, leaves: _Leaves, depth: int) -> str:
        kind = spec.kind
        if kind is TreeKind.LEAF:
            return str(leaves.take(1)[0])
        if kind is TreeKind.NONE:
            return "None"
        named = self._named
        if (named is not None and len(spec.children) == len(named.tree.children)
                and spec == named.tree and leaves.peek_text(len(named.leaves)) == named.leaves):
            leaves.take(len(named.leaves))
            return f"<{named.name}: {arrays(len(named.leaves))}>"
        if self._limit is not None and depth > self._limit:
            count = spec.num_leaves
            leaves.take(count)
            return _wrap(spec, f"...{arrays(count)}")
        children = [self._node(c, leaves, depth + 1) for c in spec.children]
        if kind is TreeKind.TUPLE and len(children) == 1:
            return f"({children[0]},)"
        if kind is TreeKind.DICT:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(spec.children_names, children)) + "}"
        return _wrap(spec, ", ".join(children))


def _wrap(spec: TreeSpec, inside: str) -> str:
    if spec.kind is TreeKind.TUPLE:
        return f"({inside})"
    if spec.kind is TreeKind.LIST:
        return f"[{inside}]"
    if spec.kind is TreeKind.DICT:
        return "{" + inside + "}"
    return f"{spec.custom_name}({inside})"


class _Leaves:
    """The avals of one side, consumed in flattening order."""

    def __init__(self, avals: tuple[AvalRecord, ...]) -> None:
        self._avals, self._next = avals, 0

    def take(self, n: int) -> tuple[AvalRecord, ...]:
        taken = self._avals[self._next:self._next + n]
        self._next += n
        return taken

    def peek_text(self, n: int) -> tuple[str, ...]:
        return tuple(str(a) for a in self._avals[self._next:self._next + n])
