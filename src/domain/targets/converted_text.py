"""What ``jaxport inspect`` prints of a converted directory, for every target (no runtime needed):
its manifest, described with its target's entry in the registry."""

from __future__ import annotations

from jaxport.domain.bundle.manifest import example_counts, examples_line
from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.artifact.info import constraints_lines, count, signature_text
from .registry import TARGETS


def converted_text(manifest: ConvertedManifest, path: str) -> str:
    """The summary of the directory at ``path``: target, functions, variants and their files, weights.

    >>> from jaxport.domain.artifact.record import AvalRecord, DType, TreeSpec
    >>> from jaxport.domain.checked_directory import FileDigest
    >>> from jaxport.domain.calls.signature import Signature
    >>> from jaxport.domain.converted.manifest import ConvertedFunction, Variant
    >>> sig = Signature("f", TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf()), TreeSpec.of_dict({})),
    ...                 (AvalRecord(("b",), DType.FLOAT32),), TreeSpec.leaf(), (AvalRecord(("b",), DType.FLOAT32),))
    >>> m = ConvertedManifest("example", {"cpu": "znver4"},  # a target without a registry entry
    ...                       (ConvertedFunction(sig, (Variant("f.b=8.vmfb", (("b", 8),)),)),),
    ...                       files={"f.b=8.vmfb": FileDigest(1200, "00")})
    >>> print(converted_text(m, "out"))
    out: example, converted by jaxport (format 1): 1 function, 1 variant
    target: cpu=znver4
    f (float32[b]) -> float32[b]
      inputs arg0; outputs output_0
      b=8: f.b=8.vmfb (1200 bytes)
    """
    entry = TARGETS.get(manifest.target)
    runtime = entry.plan.runtime if entry is not None else manifest.target
    variants = sum(len(f.variants) for f in manifest.functions)
    weights = ""
    if manifest.weights is not None:
        total = sum(w.nbytes for w in manifest.weights.leaves)
        where = manifest.weights.file or "the target's own form"
        weights = f", weights {count(len(manifest.weights.leaves), 'array')} ({total} bytes) in {where}"
    details = entry.plan.describe(manifest.target_details) if entry is not None and entry.plan.describe else \
        " ".join(f"{k}={v}" for k, v in manifest.target_details.items() if not isinstance(v, (dict, list)))
    lines = [f"{path}: {runtime}, converted by jaxport (format {manifest.format_version}): "
             f"{count(len(manifest.functions), 'function')}, {count(variants, 'variant')}{weights}",
             f"target: {details}"]
    if manifest.quantization is not None:
        lines.extend(manifest.quantization.lines())
    for f in manifest.functions:
        s = f.signature
        reads = " (reads the weights)" if s.nr_weights else ""
        lines.append(f"{f.name}{reads} {signature_text(s, width=200)}")
        lines += constraints_lines(s.constraints)
        lines.append(f"  inputs {', '.join(s.input_names) or '(none)'}; outputs {', '.join(s.output_names) or '(none)'}")
        for v in f.variants:
            binding = ",".join(f"{k}={n}" for k, n in v.dims) or "any size"
            size = manifest.files[v.file].size if v.file in manifest.files else 0
            lines.append(f"  {binding}: {v.file} ({size} bytes)")
    if manifest.examples:
        lines.append(examples_line(example_counts(manifest.examples)))
    if manifest.generation is not None:
        lines.extend(manifest.generation.lines())
    return "\n".join(lines)
