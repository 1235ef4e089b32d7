"""What an artifact says about itself, for tools that do not run it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .artifact import ArtifactRecord, AvalRecord, HloShardingRecord, NamedShardingRecord, TreeKind, TreeSpec
from .module_format import stablehlo_version


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

    @property
    def has_vjp(self) -> bool:
        """Whether the artifact includes at least a first-order VJP."""
        return self.vjp_order > 0

    @staticmethod
    def of(record: ArtifactRecord) -> ArtifactInfo:
        """The summary of a decoded artifact."""
        return ArtifactInfo(
            fun_name=record.function_name,
            signature=signature_text(record),
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
        )

    def __str__(self) -> str:
        lines = [
            f"{self.fun_name}{self.signature}",
            f"  platforms: {', '.join(self.platforms)}; devices: {self.nr_devices}; "
            f"calling convention: {self.calling_convention_version}",
            f"  module: {self.module_size} bytes, StableHLO {self.stablehlo_version or 'unknown'}; "
            f"vjp order: {self.vjp_order}",
        ]
        if any(s != "unspecified" for s in self.in_shardings + self.out_shardings):
            lines.append(f"  in shardings: {', '.join(self.in_shardings)}")
            lines.append(f"  out shardings: {', '.join(self.out_shardings)}")
        if self.ordered_effects or self.unordered_effects:
            lines.append(f"  effects: ordered {list(self.ordered_effects)}, "
                         f"unordered {list(self.unordered_effects)}")
        if self.disabled_checks:
            lines.append(f"  disabled checks: {', '.join(self.disabled_checks)}")
        return "\n".join(lines)


def signature_text(record: ArtifactRecord) -> str:
    """``(args...) -> results`` with ``dtype[shape]`` leaves, e.g. ``(x: float32[b,4]) -> float32[b]``."""
    ins = iter(record.in_avals)
    tree = record.in_tree
    if tree.kind is TreeKind.TUPLE and len(tree.children) == 2:
        args, kwargs = tree.children
        parts = [_render(child, ins) for child in args.children]
        parts += [f"{name}={_render(child, ins)}"
                  for name, child in zip(kwargs.children_names, kwargs.children)]
        inputs = f"({', '.join(parts)})"
    else:
        inputs = _render(tree, ins)
    return f"{inputs} -> {_render(record.out_tree, iter(record.out_avals))}"


def _render(spec: TreeSpec, leaves: Iterator[AvalRecord]) -> str:
    kind = spec.kind
    if kind is TreeKind.LEAF:
        return str(next(leaves))
    if kind is TreeKind.NONE:
        return "None"
    children = [_render(c, leaves) for c in spec.children]
    if kind is TreeKind.TUPLE:
        return f"({children[0]},)" if len(children) == 1 else f"({', '.join(children)})"
    if kind is TreeKind.LIST:
        return f"[{', '.join(children)}]"
    if kind is TreeKind.DICT:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(spec.children_names, children)) + "}"
    return f"{spec.custom_name}({', '.join(children)})"


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
