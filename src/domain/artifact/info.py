"""What an artifact says about itself, for tools that do not run it (a bundle's summary:
:mod:`jaxport.domain.bundle.info`).

The text of a call signature, ``(float32[b,4], scale=float32[]) -> float32[b]``
(:func:`signature_text`), is rendered from the signature's trees and avals, each leaf as
``dtype[shape]``. For output meant to be read on a terminal, two options keep the text short
however large the model: a subtree given as ``named`` (a bundle's weights) is
shown as one token, ``<params: 148 arrays>``; and with ``width``, containers
are shown by their number of leaves, ``{...144 arrays}``, from the deepest
level up until the text fits, and the text is cut if even that is too long.

>>> from .record import AvalRecord, DType
>>> w = TreeSpec.of_dict({"b": TreeSpec.leaf(), "w": TreeSpec.leaf()})
>>> avals = (AvalRecord(("3",), DType.FLOAT32), AvalRecord(("4", "3"), DType.FLOAT32),
...          AvalRecord(("n", "4"), DType.FLOAT32))
>>> sig = Signature("f", TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.of_dict({"dense": w}), TreeSpec.leaf()),
...                                        TreeSpec.of_dict({})),
...                 avals, TreeSpec.leaf(), (AvalRecord(("n", "3"), DType.FLOAT32),))
>>> signature_text(sig)
"({'dense': {'b': float32[3], 'w': float32[4,3]}}, float32[n,4]) -> float32[n,3]"
>>> signature_text(sig, width=50)
'({...2 arrays}, float32[n,4]) -> float32[n,3]'
>>> signature_text(sig, named=NamedTree("params", TreeSpec.of_dict({"dense": w}),
...                                        ("float32[3]", "float32[4,3]")))
'(<params: 2 arrays>, float32[n,4]) -> float32[n,3]'
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from jaxport.domain.calls.signature import Signature
from .record import ArtifactRecord, AvalRecord, TreeKind, TreeSpec
from .sharding import HloShardingRecord, NamedShardingRecord
from .module_format import stablehlo_version
from .producer import Producer

#: The most characters a line of ``str(ArtifactInfo)`` has (a bundle's summary indents it by 2 more).
WIDTH = 150


@dataclass(frozen=True, slots=True)
class ArtifactInfo:
    """A summary of an artifact, read without JAX.

    Attributes:
        fun_name: the exported function's name.
        signature: the call signature as text: the ``(args, kwargs)`` pytree
            with each leaf's dtype and (possibly symbolic) shape, then ``->``
            and the result pytree.
        platforms: the platforms it was lowered for.
        calling_convention_version: the version of ``main``'s convention.
        nr_devices: the number of devices it was lowered for.
        in_shardings, out_shardings: one text per flat input/output
            (``"unspecified"`` when none was given).
        ordered_effects, unordered_effects: the effects' type names.
        disabled_checks: the wire forms of the disabled safety checks.
        vjp_order: how many orders of VJP the artifact includes (0: none).
        module_size: the size of the StableHLO module in bytes.
        stablehlo_version: the portable artifact's target version, if recorded.
        brief_signature: the signature as ``str()`` shows it when that is
            not ``signature`` itself: a named subtree (a bundle's weights) as
            one token, containers shown by their number of leaves so that
            the line fits in :data:`WIDTH` characters.
        producer: the versions that wrote a sealed artifact; None for an
            unsealed one or one that ``jax.export`` wrote.
        constraints: the symbolic constraints a call must meet (``"t <= 128"``).
        weak_types: the wire names of the inputs and outputs whose dtype is weak (a Python
            scalar's), which readers before JAX 0.12.1 (format generation 13) read as strong.
    """

    fun_name: str
    signature: str
    platforms: tuple[str, ...]
    calling_convention_version: int
    nr_devices: int
    in_shardings: tuple[str, ...]
    out_shardings: tuple[str, ...]
    ordered_effects: tuple[str, ...]
    unordered_effects: tuple[str, ...]
    disabled_checks: tuple[str, ...]
    vjp_order: int
    module_size: int
    stablehlo_version: str | None
    brief_signature: str | None = None
    producer: Producer | None = None
    constraints: tuple[str, ...] = ()
    weak_types: tuple[str, ...] = ()

    @property
    def has_vjp(self) -> bool:
        """Whether the artifact includes at least a first-order VJP."""
        return self.vjp_order > 0

    @staticmethod
    def of(record: ArtifactRecord, *, named: NamedTree | None = None) -> ArtifactInfo:
        """The summary of a decoded artifact.

        Args:
            record: the artifact.
            named: a subtree that the brief signature shows as one token.
        """
        signature = signature_text(record.signature)
        room = WIDTH - len(record.function_name)
        brief = signature_text(record.signature, named=named, width=room) \
            if named is not None or len(signature) > room else None
        return ArtifactInfo(
            fun_name=record.function_name,
            signature=signature,
            platforms=record.platforms,
            calling_convention_version=record.calling_convention_version,
            nr_devices=record.nr_devices,
            in_shardings=tuple(sharding_text(s) for s in record.in_shardings),
            out_shardings=tuple(sharding_text(s) for s in record.out_shardings),
            ordered_effects=tuple(e.type_name for e in record.ordered_effects),
            unordered_effects=tuple(e.type_name for e in record.unordered_effects),
            disabled_checks=tuple(str(c) for c in record.disabled_checks),
            vjp_order=record.vjp_order,
            module_size=len(record.mlir_module_serialized),
            stablehlo_version=stablehlo_version(record.mlir_module_serialized),
            brief_signature=None if brief == signature else brief,
            producer=record.producer,
            constraints=record.constraints,
            weak_types=record.signature.weak_typed,
        )

    def __str__(self) -> str:
        lines = [
            f"{self.fun_name}{self.brief_signature or self.signature}",
            *constraints_lines(self.constraints),
            f"  platforms: {', '.join(self.platforms)}; devices: {self.nr_devices}; "
            f"calling convention: {self.calling_convention_version}",
            f"  module: {self.module_size} bytes, StableHLO {self.stablehlo_version or 'unknown'}; "
            f"vjp order: {self.vjp_order}",
        ]
        if any(s != "unspecified" for s in self.in_shardings + self.out_shardings):
            lines.append(_listed("  in shardings: ", self.in_shardings))
            lines.append(_listed("  out shardings: ", self.out_shardings))
        if self.ordered_effects or self.unordered_effects:
            lines.append(clip(f"  effects: ordered {list(self.ordered_effects)}, "
                              f"unordered {list(self.unordered_effects)}"))
        if self.disabled_checks:
            lines.append(_listed("  disabled checks: ", self.disabled_checks))
        if self.weak_types:
            lines.append(clip(f"  weak types: {', '.join(self.weak_types)} (strong for readers before "
                              "JAX 0.12.1, which lose them)"))
        if self.producer is not None:
            lines.append(f"  written by: {self.producer}")
        return "\n".join(lines)


def constraints_lines(constraints: tuple[str, ...]) -> list[str]:
    """The line that lists a signature's symbolic constraints, when it has some.

    >>> constraints_lines(("t <= 128", "b >= 1"))
    ['  constraints: t <= 128, b >= 1']
    """
    return [clip(f"  constraints: {', '.join(constraints)}")] if constraints else []


def weights_argument(record: ArtifactRecord) -> NamedTree | None:
    """The first positional argument of a function that takes a bundle's weights, as ``params``.

    None when the function has no positional argument or the argument holds no array.
    """
    args, _ = parameters(record.signature)
    count = args[0].num_leaves if args else 0
    return NamedTree("params", args[0], tuple(str(a) for a in record.in_avals[:count])) if count else None


def count(n: int, noun: str) -> str:
    """``"1 array"``, ``"2 arrays"``: ``n`` and ``noun``, plural unless ``n`` is 1."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def sharding_text(sharding: NamedShardingRecord | HloShardingRecord | None) -> str:
    """A short text for one sharding: ``P('x', None) over {x: 2, y: 4}``."""
    if sharding is None:
        return "unspecified"
    if isinstance(sharding, HloShardingRecord):
        return f"hlo-sharding({len(sharding.proto)} bytes)"
    parts = ", ".join("None" if not p else repr(p[0]) if len(p) == 1 else repr(p)
                      for p in sharding.spec.partitions)
    mesh = ", ".join(f"{n}: {s}" for n, s in zip(sharding.mesh.axis_names, sharding.mesh.axis_sizes))
    kind = f" [{sharding.memory_kind}]" if sharding.memory_kind else ""
    return f"P({parts}) over {{{mesh}}}{kind}"


def clip(text: str, width: int = WIDTH) -> str:
    """``text``, cut to ``width`` characters (ending in ``...``) when longer.

    >>> clip("abcdefgh", 6)
    'abc...'
    """
    return text if len(text) <= width else text[:max(width - 3, 0)] + "..."


def _listed(label: str, items: tuple[str, ...]) -> str:
    """``label`` and ``items``, in at most :data:`WIDTH` characters.

    What does not fit is said by counts: repeated items once, as ``148 x item``,
    then ``... and N more`` for the rest.

    >>> _listed("in: ", ("unspecified",) * 300)
    'in: 300 x unspecified'
    """
    text = label + ", ".join(items)
    if len(text) <= WIDTH:
        return text
    parts = [item if n == 1 else f"{n} x {item}" for item, n in Counter(items).items()]
    shown: list[str] = []
    for part in parts:
        if len(label + ", ".join([*shown, part, f"... and {len(parts) - len(shown) - 1} more"])) > WIDTH:
            break
        shown.append(part)
    if len(shown) < len(parts):
        shown.append(f"... and {len(parts) - len(shown)} more")
    return label + ", ".join(shown)


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


def signature_text(signature: Signature, *, named: NamedTree | None = None,
                   width: int | None = None) -> str:
    """``(args...) -> results`` with ``dtype[shape]`` leaves.

    Args:
        signature: the function's (an export's, a converted function's).
        named: a subtree to show as ``<name: N arrays>`` wherever it occurs
            (same structure and same leaves).
        width: the most characters the text may have; None for the whole text.
    """
    text = _Text(signature, named, None).text()
    if width is None or len(text) <= width:
        return text
    for depth in range(_container_depth(signature) - 1, -2, -1):
        text = _Text(signature, named, depth).text()
        if len(text) <= width:
            return text
    return text[:max(width - 3, 0)] + "..."


def parameters(signature: Signature) -> tuple[tuple[TreeSpec, ...], TreeSpec | None]:
    """The positional parameters and the keyword arguments' dict node of the input tree.

    ``((), None)`` when the input tree is not an ``(args, kwargs)`` pair.
    """
    tree = signature.in_tree
    if tree.kind is TreeKind.TUPLE and len(tree.children) == 2:
        return tree.children[0].children, tree.children[1]
    return (), None


def _container_depth(signature: Signature) -> int:
    """The depth of the deepest container, counting each parameter and the result as depth 0."""
    args, kwargs = parameters(signature)
    roots = [*args, *kwargs.children] if kwargs is not None else [signature.in_tree]
    pending = [(root, 0) for root in (*roots, signature.out_tree)]
    deepest = -1
    while pending:
        node, depth = pending.pop()
        if node.kind not in (TreeKind.LEAF, TreeKind.NONE):
            deepest = max(deepest, depth)
            pending.extend((child, depth + 1) for child in node.children)
    return deepest


class _Text:
    """One rendering, with containers below ``limit`` (None: none) shown by their leaf count."""

    def __init__(self, signature: Signature, named: NamedTree | None, limit: int | None) -> None:
        self._signature, self._named, self._limit = signature, named, limit

    def text(self) -> str:
        signature = self._signature
        args, kwargs = parameters(signature)
        ins = _Leaves(signature.in_avals)
        if kwargs is None:
            inputs = self._node(signature.in_tree, ins, 0)
        else:
            parts = [self._node(child, ins, 0) for child in args]
            parts += [f"{name}={self._node(child, ins, 0)}"
                      for name, child in zip(kwargs.children_names, kwargs.children)]
            inputs = f"({', '.join(parts)})"
        return f"{inputs} -> {self._node(signature.out_tree, _Leaves(signature.out_avals), 0)}"

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
            return f"<{named.name}: {count(len(named.leaves), 'array')}>"
        if self._limit is not None and depth > self._limit:
            leaves.take(spec.num_leaves)
            return _wrap(spec, f"...{count(spec.num_leaves, 'array')}")
        children = [self._node(c, leaves, depth + 1) for c in spec.children]
        if kind is TreeKind.TUPLE and len(children) == 1:
            return f"({children[0]},)"
        if kind is TreeKind.DICT:
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(spec.children_names, children)) + "}"
        return _wrap(spec, ", ".join(children))


#: The brackets of a container's text, by kind (a custom node's: its name and parentheses).
_BRACKETS = {TreeKind.TUPLE: ("(", ")"), TreeKind.LIST: ("[", "]"), TreeKind.DICT: ("{", "}")}


def _wrap(spec: TreeSpec, inside: str) -> str:
    opening, closing = _BRACKETS.get(spec.kind, (f"{spec.custom_name}(", ")"))
    return f"{opening}{inside}{closing}"


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
