"""What an artifact or a bundle says about itself, for tools that do not run it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .record import ArtifactRecord
from .sharding import HloShardingRecord, NamedShardingRecord
from jaxport.domain.bundle.manifest import Manifest, WeightRecord, example_counts, examples_line
from .module_format import stablehlo_version
from .producer import Producer
from .signature_text import NamedTree, parameters, signature_text

#: The most characters a line of ``str(ArtifactInfo)`` has (a bundle's summary indents it by 2 more).
WIDTH = 150
#: The most characters of a key path in a bundle's weights' table (longer ones lose their middle).
_KEY_PATH_WIDTH = 80


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


@dataclass(frozen=True, slots=True)
class BundleFunctionInfo:
    """One function of a bundle: its name, whether it takes the weights, its artifact's summary."""

    name: str
    file: str
    takes_params: bool
    artifact: ArtifactInfo


@dataclass(frozen=True, slots=True)
class BundleInfo:
    """A summary of a bundle directory, read without JAX.

    Attributes:
        path: the directory.
        format_version: the manifest's format version.
        functions: each function's summary.
        weights: each weight's key path, dtype, shape (and stored form).
        metadata: the metadata given at save.
        producer: the versions that wrote the bundle, if its manifest says.
        examples: the number of golden examples of each function that has some.
    """

    path: str
    format_version: int
    functions: tuple[BundleFunctionInfo, ...]
    weights: tuple[WeightRecord, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    producer: Producer | None = None
    examples: Mapping[str, int] = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        """The size of all weights in bytes."""
        return sum(w.nbytes for w in self.weights)

    @staticmethod
    def of(path: str, manifest: Manifest, artifacts: Mapping[str, ArtifactInfo]) -> BundleInfo:
        """The summary of a bundle from its manifest and its functions' summaries (by name)."""
        functions = tuple(BundleFunctionInfo(e.name, e.file, e.takes_params, artifacts[e.name])
                          for e in manifest.functions)
        return BundleInfo(path, manifest.format_version, functions, manifest.weights,
                          dict(manifest.metadata), manifest.producer, example_counts(manifest.examples))

    def weights_table(self) -> str:
        """The weights as a table: key path, dtype, shape, bytes; then the total."""
        rows = [("key path", "dtype", "shape", "bytes")]
        rows += [(_key_path_text(w.name), w.dtype, str(w.shape), str(w.nbytes))
                 for w in self.weights]
        rows.append(("total", "", _count(len(self.weights), "array"), str(self.total_bytes)))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  "
                         f"{r[3]:>{widths[3]}}".rstrip() for r in rows)

    def __str__(self) -> str:
        lines = [f"bundle {self.path} (format {self.format_version}): {_count(len(self.functions), 'function')}, "
                 f"{_count(len(self.weights), 'weight')}, {self.total_bytes} bytes"]
        if self.producer is not None:
            lines.append(f"written by: {self.producer}")
        for f in self.functions:
            bound = "" if f.takes_params else " (takes no weights)"
            lines.append(f"{f.file}{bound}:")
            # A function written with the bundle says nothing the header has not said.
            artifact = replace(f.artifact, producer=None) if f.artifact.producer == self.producer else f.artifact
            lines.append("  " + str(artifact).replace("\n", "\n  "))
        lines.append("weights:")
        lines.append("  " + self.weights_table().replace("\n", "\n  "))
        if self.examples:
            lines.append(examples_line(self.examples))
        if self.metadata:
            lines.append(clip(f"metadata: {dict(self.metadata)}"))
        return "\n".join(lines)


def weights_argument(record: ArtifactRecord) -> NamedTree | None:
    """The first positional argument of a function that takes a bundle's weights, as ``params``.

    None when the function has no positional argument or the argument holds no array.
    """
    args, _ = parameters(record)
    if not args:
        return None
    weights = args[0]
    count = weights.num_leaves
    if count == 0:
        return None
    return NamedTree("params", weights, tuple(str(a) for a in record.in_avals[:count]))


def _key_path_text(name: str) -> str:
    if not name:
        return "(root)"
    if len(name) <= _KEY_PATH_WIDTH:
        return name
    keep = (_KEY_PATH_WIDTH - 3) // 2
    return f"{name[:keep]}...{name[-keep:]}"


def _count(n: int, noun: str) -> str:
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
