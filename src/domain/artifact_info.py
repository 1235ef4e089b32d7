"""What an artifact says about itself, for tools that do not run it."""

from __future__ import annotations

from dataclasses import dataclass

from .artifact import ArtifactRecord, HloShardingRecord, NamedShardingRecord
from .module_format import stablehlo_version
from .producer import Producer
from .signature_text import NamedTree, signature_text

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
        signature = signature_text(record)
        brief = None
        room = WIDTH - len(record.function_name)
        if named is not None or len(signature) > room:
            brief = signature_text(record, named=named, width=room)
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
        )

    def __str__(self) -> str:
        lines = [
            f"{self.fun_name}{self.brief_signature or self.signature}",
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
        if self.producer is not None:
            lines.append(f"  written by: {self.producer}")
        return "\n".join(lines)


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
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    parts = [item if n == 1 else f"{n} x {item}" for item, n in counts.items()]
    shown: list[str] = []
    for part in parts:
        if len(label + ", ".join([*shown, part, f"... and {len(parts) - len(shown) - 1} more"])) > WIDTH:
            break
        shown.append(part)
    if len(shown) < len(parts):
        shown.append(f"... and {len(parts) - len(shown)} more")
    return label + ", ".join(shown)
