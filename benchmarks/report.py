"""Prints the median times and ratios of a ``pytest-benchmark`` JSON report.

Usage: ``python benchmarks/report.py build/bench.json``

Each group of the report (see ``benchmarks/conftest.py``) measures one quantity
through a baseline, jaxport and ``jax.export``; ``extra_info`` says which
benchmark is which, and the chunks of one role are pooled. Export groups are shown as the overhead above their
baseline, ``(export - baseline) / baseline``; dispatch groups as the ratio to
theirs; wrap groups as the time above their baseline (a copy of the module);
call-side and micro groups (no baseline) as their medians. All show
jaxport / jax.export, and a last table lists that ratio for every group.
The verification group shows what verifying adds to a cold load beside the
time of ``python -c "import jax"``.
Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROLES = ("baseline", "jaxport", "jax.export")
VERIFY_ROLES = ("import jax", "unverified", "verified")  # benchmarks/test_verification.py
#: benchmarks/test_tf_runtime.py: an eager call by runtime, and a conversion to a SavedModel.
RUNTIME_ROLES = ("jax.jit", "jaxport on JAX", "TF SavedModel", "jaxport on TF")
CONVERSION_ROLES = ("to_savedmodel", "copy of the weights")
RUNTIME_TARGET = 1.2  # a SavedModel's call in TensorFlow within 1.2x of jax.jit(f)
GRAPH_TARGET = 0.01  # saved_model.pb under 1% of the weights' size
DISPATCH_TARGET = 1.5  # jaxport's eager call within 1.5x of jax.jit(f)(x)
COLD_START_TARGET = 1.1  # first call with JAX's cache warm: jaxport / jax.export
SCALE_TARGET = 1.3  # time per operation at 60k over that at 2k
PEAK_TARGET = 1.0  # peak memory during export no more than jax.export's
SAME_WITHIN = 0.02  # the summary calls ratios within 2% of 1 "~same"


@dataclass
class Group:
    """The timings of one benchmark group, pooled by role over its chunks."""

    name: str
    kind: str
    baseline: str
    samples: dict[str, list[float]] = field(default_factory=dict)
    stablehlo_ops: int | None = None
    timers: set[str] = field(default_factory=set)
    #: Per role, the facts its benchmarks recorded (sizes, peak memory).
    info: dict[str, dict[str, Any]] = field(default_factory=dict)

    def median(self, role: str) -> float | None:
        """The median time per call of ``role`` over all its rounds, or None."""
        data = self.samples.get(role)
        return statistics.median(data) if data else None

    def rounds(self) -> int:
        """The fewest rounds that any role of the group had."""
        return min((len(d) for d in self.samples.values() if d), default=0)

    def ratio(self, role: str, to: str) -> float | None:
        """``median(role) / median(to)``, or None when either is missing."""
        num, den = self.median(role), self.median(to)
        return None if num is None or not den else num / den

    def above_baseline(self, role: str) -> float | None:
        """``median(role) - median(baseline)``, or None when either is missing."""
        value, base = self.median(role), self.median("baseline")
        return None if value is None or base is None else value - base

    def ratio_above_baseline(self) -> float | None:
        """jaxport / jax.export of their times above the baseline, or None."""
        num, den = self.above_baseline("jaxport"), self.above_baseline("jax.export")
        return None if num is None or den is None or den <= 0 else num / den


#: The roles of benchmarks/test_generate.py ("jax.jit copied": its loop without donation, peak memory only).
GENERATE_ROLES = ("jax.jit", "bundle", "onnx", "onnx loop", "litert", "iree", "savedmodel", "genai", "jax.jit copied")


def read_groups(report: Any) -> list[Group]:
    """The groups of a decoded pytest-benchmark JSON report, in first-seen order.

    The benchmarks of one group and role (its chunks) are pooled: their
    per-round times (``stats.data``, written by ``--benchmark-json``) are
    joined, or, in a report without them, their medians are.

    Raises:
        ValueError: the report is not a pytest-benchmark JSON report.
    """
    if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), list):
        raise ValueError("not a pytest-benchmark JSON report: no 'benchmarks' list")
    groups: dict[str, Group] = {}
    for bench in report["benchmarks"]:
        info: dict[str, Any] = bench.get("extra_info") or {}
        role = info.get("role")
        if role not in (ROLES + BUNDLE_ROLES + VERIFY_ROLES + RUNTIME_ROLES + CONVERSION_ROLES + IREE_ROLES
                        + LITERT_ROLES + SERVING_ROLES + ONNX_ROLES + QUANTIZE_ROLES + GENERATE_ROLES):
            continue
        name = str(bench.get("group") or bench["name"])
        group = groups.setdefault(
            name, Group(name, str(info.get("kind", "")), str(info.get("baseline", "baseline"))))
        stats = bench["stats"]
        # Cold-start and verification benchmarks time child processes; the
        # children report the quantity of interest (their first call, their
        # load) in extra_info.
        data = (info.get("first_call_s") or info.get("load_s") or stats.get("data")
                or [stats["median"]])
        group.samples.setdefault(role, []).extend(float(t) for t in data)
        group.timers.add(str((bench.get("options") or {}).get("timer", "?")))
        group.info.setdefault(role, {}).update(info)
        if "stablehlo_ops" in info:
            group.stablehlo_ops = int(info["stablehlo_ops"])
    return list(groups.values())


def seconds(value: float | None) -> str:
    """A duration with a unit that keeps three or four significant digits."""
    if value is None:
        return "-"
    if value < 0:
        return "-" + seconds(-value)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:,.3g} {unit}" if value < 100 * scale else f"{value / scale:,.0f} {unit}"
    return f"{value * 1e9:,.0f} ns"


def times(value: float | None) -> str:
    """A ratio, e.g. ``1.05x``."""
    return "-" if value is None else f"{value:.2f}x"


def percent(value: float | None) -> str:
    """A ratio as the percentage above 1, e.g. ``+12.0%`` for 1.12."""
    return "-" if value is None else f"{(value - 1) * 100:+.1f}%"


def timer_names(groups: Sequence[Group]) -> str:
    """The timers the groups' benchmarks used, e.g. ``time.perf_counter``."""
    return ", ".join(sorted(set().union(*(g.timers for g in groups))))


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in (headers, *rows)) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *map(line, rows)])


def _lead_cells(g: Group) -> list[str]:
    """Name, operation count, rounds, and the three medians: the first cells of a timing row."""
    return [g.name, "-" if g.stablehlo_ops is None else f"{g.stablehlo_ops:,}", str(g.rounds()),
            seconds(g.median("baseline")), seconds(g.median("jaxport")), seconds(g.median("jax.export"))]


def export_section(groups: Sequence[Group]) -> str:
    """The export table: medians, overheads above the baseline, jaxport / jax.export."""
    rows = [[*_lead_cells(g),
             percent(g.ratio("jaxport", "baseline")),
             percent(g.ratio("jax.export", "baseline")),
             times(g.ratio_above_baseline()),
             times(g.ratio("jaxport", "jax.export"))] for g in groups]
    headers = ["group", "ops", "rounds", groups[0].baseline, "jaxport", "jax.export",
               "jaxport overhead", "jax.export overhead", "overhead jaxport/jax.export",
               "jaxport/jax.export"]
    return (f"Export time (median per round, fresh function each round; timer {timer_names(groups)});"
            " overhead = (export - baseline) / baseline\n" + table(headers, rows))


def dispatch_section(groups: Sequence[Group]) -> str:
    """The dispatch table: medians per call, ratios to the baseline and to jax.export."""
    rows = []
    for g in groups:
        to_base = g.ratio("jaxport", "baseline")
        rows.append([g.name,
                     str(g.rounds()),
                     seconds(g.median("baseline")),
                     seconds(g.median("jaxport")),
                     seconds(g.median("jax.export")),
                     times(to_base),
                     times(g.ratio("jax.export", "baseline")),
                     times(g.ratio("jaxport", "jax.export")),
                     "-" if to_base is None else ("yes" if to_base <= DISPATCH_TARGET else "NO")])
    headers = ["group", "rounds", groups[0].baseline, "jaxport", "jax.export", "jaxport/base",
               "jax.export/base", "jaxport/jax.export", f"within {DISPATCH_TARGET}x"]
    return (f"Eager call, steady state (median time per call; base = {groups[0].baseline}; "
            f"timer {timer_names(groups)})\n"
            + table(headers, rows))


def wrap_section(groups: Sequence[Group]) -> str:
    """The wrap table: copy (baseline), copy+wrap of each, the wrap alone, ratios."""
    rows = [[*_lead_cells(g),
             seconds(g.above_baseline("jaxport")),
             seconds(g.above_baseline("jax.export")),
             times(g.ratio_above_baseline()),
             times(g.ratio("jaxport", "jax.export"))] for g in groups]
    headers = ["group", "ops", "rounds", groups[0].baseline, "jaxport", "jax.export",
               "jaxport wrap", "jax.export wrap", "wrap jaxport/jax.export",
               "with copy jaxport/jax.export"]
    return (f"Wrapping main (median per round; each wraps its own copy of the same module; "
            f"timer {timer_names(groups)}); wrap = median - median({groups[0].baseline})\n"
            + table(headers, rows))


def peer_section(title: str, groups: Sequence[Group]) -> str:
    """A table of medians of jaxport and jax.export (no baseline) and their ratio."""
    rows = [[g.name, str(g.rounds()), seconds(g.median("jaxport")), seconds(g.median("jax.export")),
             times(g.ratio("jaxport", "jax.export"))] for g in groups]
    return (f"{title} (median per call; timer {timer_names(groups)})\n"
            + table(["group", "rounds", "jaxport", "jax.export", "jaxport/jax.export"], rows))


def call_section(groups: Sequence[Group]) -> str:
    """The call-side abstract evaluation table."""
    return peer_section("Call-side abstract evaluation of a polymorphic export", groups)


def micro_section(groups: Sequence[Group]) -> str:
    """The table of micro-benchmarks of symbolic shapes."""
    return peer_section("Symbolic shapes: parsing and the decision procedure", groups)


def coldstart_section(groups: Sequence[Group]) -> str:
    """The cold-start table: first call without a cache, and with JAX's cache warm for each."""
    rows = []
    for g in groups:
        ratio = g.ratio("jaxport", "jax.export")
        rows.append([g.name, str(g.rounds()), seconds(g.median("baseline")), seconds(g.median("jaxport")),
                     seconds(g.median("jax.export")), times(g.ratio("jaxport", "baseline")), times(ratio),
                     "-" if ratio is None else ("yes" if ratio <= COLD_START_TARGET else "NO")])
    headers = ["group", "rounds", f"jaxport, {groups[0].baseline}", "jaxport warm", "jax.export warm",
               "jaxport warm/no cache", "jaxport/jax.export", f"within {COLD_START_TARGET}x"]
    return ("Cold start (median first call in a fresh child process, after import and load; "
            "warm = JAX's persistent compilation cache holds the call)\n" + table(headers, rows))


def scale_section(groups: Sequence[Group]) -> str:
    """Time per operation of each step at the smallest and largest size, and their ratio."""
    steps: dict[str, list[Group]] = {}
    for g in groups:
        steps.setdefault(g.name.split(" @ ")[0], []).append(g)
    rows = []
    for step, sized in steps.items():
        sized = sorted((g for g in sized if g.stablehlo_ops), key=lambda g: g.stablehlo_ops or 0)
        if len(sized) < 2:
            continue
        small, large = sized[0], sized[-1]
        for role in ("jaxport", "jax.export"):
            a, b = small.median(role), large.median(role)
            if a is None or b is None:
                continue
            per_small, per_large = a / (small.stablehlo_ops or 1), b / (large.stablehlo_ops or 1)
            ratio = per_large / per_small
            rows.append([step, role, f"{small.stablehlo_ops:,}", seconds(per_small),
                         f"{large.stablehlo_ops:,}", seconds(per_large), times(ratio),
                         "yes" if ratio <= SCALE_TARGET else "NO"])
    headers = ["step", "of", "ops", "per op", "ops", "per op", "large/small", f"within {SCALE_TARGET}x"]
    return ("Scale: time per operation (median per round / operations)\n" + table(headers, rows)
            + peak_table(groups))


def peak_table(groups: Sequence[Group]) -> str:
    """The peak memory that the groups' children recorded (``peak_bytes``), jaxport
    against jax.export (at most 1.00x); empty when none did."""
    rows = []
    for g in groups:
        ours, theirs = (g.info.get(r, {}).get("peak_bytes") for r in ("jaxport", "jax.export"))
        if not (isinstance(ours, int) and isinstance(theirs, int) and theirs > 0):
            continue
        peaks, ratio = (ours, theirs), ours / theirs
        rows.append([g.name, *(mib(p) for p in peaks), times(ratio),
                     "yes" if ratio <= PEAK_TARGET else "NO"])
    if not rows:
        return ""
    headers = ["group", "peak jaxport", "peak jax.export", "jaxport/jax.export",
               f"within {PEAK_TARGET:.2f}x"]
    return ("\n\nPeak memory: resident memory one run adds in a fresh process\n"
            + table(headers, rows))


def headline_ratio(group: Group) -> tuple[str, float | None]:
    """What the summary compares for a group, and jaxport / jax.export of it."""
    if group.kind == "wrap":
        return "wrap alone", group.ratio_above_baseline()
    if group.kind == "export":
        return "export time", group.ratio("jaxport", "jax.export")
    if group.kind == "dispatch":
        return "time per call", group.ratio("jaxport", "jax.export")
    return "median", group.ratio("jaxport", "jax.export")


def faster(ratio: float | None) -> str:
    """Which of the two is faster for a ratio jaxport / jax.export (``~same`` within 2%)."""
    if ratio is None:
        return "-"
    if abs(ratio - 1) <= SAME_WITHIN:
        return "~same"
    return "jaxport" if ratio < 1 else "jax.export"


def summary_section(groups: Sequence[Group]) -> str:
    """One line per group: the median ratio jaxport / jax.export and which is faster."""
    rows = []
    for g in groups:
        what, ratio = headline_ratio(g)
        rows.append([g.name, what, times(ratio), faster(ratio)])
    return ("Summary: median ratio jaxport / jax.export per group (below 1.00x: jaxport is faster)\n"
            + table(["group", "of", "jaxport/jax.export", "faster"], rows))


def other_section(groups: Sequence[Group]) -> str:
    """Medians of groups of another kind, and jaxport / jax.export."""
    rows = [[g.name, *(seconds(g.median(r)) for r in ROLES),
             times(g.ratio("jaxport", "jax.export"))] for g in groups]
    return "Other groups (median)\n" + table(["group", *ROLES, "jaxport/jax.export"], rows)


BUNDLE_ROLES = ("jaxport", "safetensors", "npz")
BUNDLE_LOAD_TARGET = 1.2  # load within 1.2x of safetensors, peak memory within 1.2x of the weights


def mib(value: Any) -> str:
    """A size in bytes as MiB, e.g. ``64.0 MiB``."""
    return "-" if not isinstance(value, (int, float)) else f"{value / (1 << 20):,.1f} MiB"


def _bytes(value: Any) -> str:
    return "-" if not isinstance(value, int) else f"{value:,} B"


def bundle_section(groups: Sequence[Group]) -> str:
    """Saving and loading weights: jaxport's bundles against safetensors and np.savez."""
    rows = []
    for g in groups:
        weights = g.info.get("jaxport", {}).get("weights_bytes")
        peaks = [g.info.get(r, {}).get("peak_bytes") for r in BUNDLE_ROLES]
        peak_ratio = peaks[0] / weights if isinstance(peaks[0], int) and weights else None
        ratio = g.ratio("jaxport", "safetensors")
        is_load = "load" in g.name
        goal = "-" if not is_load or ratio is None else (
            "yes" if ratio <= BUNDLE_LOAD_TARGET and (peak_ratio or 0) <= BUNDLE_LOAD_TARGET else "NO")
        rows.append([g.name, mib(weights), str(g.rounds()), *(seconds(g.median(r)) for r in BUNDLE_ROLES),
                     times(ratio), times(g.ratio("jaxport", "npz")),
                     *(mib(p) if is_load else "-" for p in peaks), times(peak_ratio) if is_load else "-",
                     _bytes(g.info.get("jaxport", {}).get("function_bytes")) if is_load else "-", goal])
    headers = ["group", "weights", "rounds", *BUNDLE_ROLES, "jaxport/safetensors", "jaxport/npz",
               *(f"peak {r}" for r in BUNDLE_ROLES), "peak jaxport/weights", "function files",
               f"within {BUNDLE_LOAD_TARGET}x"]
    return (f"Bundles: weights saved and loaded (median per round; timer {timer_names(groups)}); "
            "peak = resident memory a load adds in a fresh process\n" + table(headers, rows))


IREE_ROLES = ("iree", "iree local-sync")  # with jaxport, jax.export and jax.jit (benchmarks/test_iree.py)
#: The role of the serving benchmarks (``benchmarks/test_serving.py``).
SERVING_ROLES = ("serve",)
IREE_FIRST_ANSWER_TARGET = 0.25  # a fresh process's first answer: load_iree / jax.export, JAX's cache warm
IREE_PEAK_TARGET = 0.3  # its peak resident memory: load_iree / jax.export
IREE_CALL_TARGET = 1.0  # a call with the weights resident: IREE / jax.jit(f)


def _goal(ratio: float | None, target: float) -> str:
    return "-" if ratio is None else ("yes" if ratio <= target else "NO")


def iree_section(groups: Sequence[Group]) -> str:
    """IREE against JAX, one row per model and quantity: medians, the ratio, the goal and whether it is met."""
    rows = []
    for g in groups:
        info = next(iter(g.info.values()), {})
        model, quantity = str(info.get("model", g.name)), str(info.get("quantity", ""))
        if quantity == "first answer":
            ratio = g.ratio("iree", "jax.export")
            rows.append([model, "first answer, fresh process", str(g.rounds()), seconds(g.median("iree")),
                         seconds(g.median("jaxport")), seconds(g.median("jax.export")), "-",
                         times(ratio), f"<= {IREE_FIRST_ANSWER_TARGET}x jax.export",
                         _goal(ratio, IREE_FIRST_ANSWER_TARGET)])
            peaks = [g.info.get(r, {}).get("peak_bytes") for r in ("iree", "jaxport", "jax.export")]
            peak_ratio = peaks[0] / peaks[2] if isinstance(peaks[0], int) and isinstance(peaks[2], int) \
                and peaks[2] else None
            rows.append([model, "peak memory, fresh process", str(g.rounds()), *(mib(p) for p in peaks), "-",
                         times(peak_ratio), f"<= {IREE_PEAK_TARGET}x jax.export",
                         _goal(peak_ratio, IREE_PEAK_TARGET)])
        elif quantity == "per call":
            for role, what in (("iree", "per call, weights resident"), ("iree local-sync", "  ... local-sync")):
                ratio = g.ratio(role, "jax.jit")
                rows.append([model, what, str(g.rounds()), seconds(g.median(role)), "-", "-",
                             seconds(g.median("jax.jit")), times(ratio), f"<= {IREE_CALL_TARGET}x jax.jit",
                             _goal(ratio, IREE_CALL_TARGET)])
        else:
            rows.append([model, quantity, str(g.rounds()), seconds(g.median("iree")), "-", "-", "-", "-", "-",
                         "-"])
    headers = ["model", "quantity", "rounds", "iree", "jaxport", "jax.export", "jax.jit", "iree/peer",
               "goal", "met"]
    return ("IREE against JAX (median; fresh process = a whole child process, JAX's persistent "
            "compilation cache warm for jaxport and jax.export)\n" + table(headers, rows))


LITERT_ROLES = ("litert", "litert builtin", "float32", "int8-weights")  # benchmarks/test_litert.py


def litert_section(groups: Sequence[Group]) -> str:
    """LiteRT against JAX, one row per model and quantity (the goals of the first answer and memory as IREE's)."""
    rows = []
    for g in groups:
        info = next(iter(g.info.values()), {})
        model, quantity = str(info.get("model", g.name)), str(info.get("quantity", ""))
        if quantity == "first answer":
            ratio = g.ratio("litert", "jax.export")
            rows.append([model, "first answer, fresh process", str(g.rounds()), seconds(g.median("litert")),
                         seconds(g.median("jaxport")), seconds(g.median("jax.export")), "-", times(ratio),
                         f"<= {IREE_FIRST_ANSWER_TARGET}x jax.export", _goal(ratio, IREE_FIRST_ANSWER_TARGET)])
            rows.append([model, "  ... builtin kernels", str(g.rounds()), seconds(g.median("litert builtin")),
                         "-", "-", "-", times(g.ratio("litert builtin", "jax.export")), "", ""])
            base = g.info.get("jax.export", {}).get("peak_bytes")
            for role, what in (("litert", "peak memory, fresh process"), ("litert builtin", "  ... builtin kernels")):
                peaks = [g.info.get(r, {}).get("peak_bytes") for r in (role, "jaxport")] + [base]
                peak_ratio = peaks[0] / base if isinstance(peaks[0], int) and isinstance(base, int) and base else None
                rows.append([model, what, str(g.rounds()), *(mib(p) for p in peaks), "-", times(peak_ratio),
                             f"<= {IREE_PEAK_TARGET}x jax.export", _goal(peak_ratio, IREE_PEAK_TARGET)])
        elif quantity == "per call":
            for role, what in (("litert", "per call, XNNPACK"), ("litert builtin", "  ... builtin kernels")):
                rows.append([model, what, str(g.rounds()), seconds(g.median(role)), "-", "-",
                             seconds(g.median("jax.jit")), times(g.ratio(role, "jax.jit")), "(reported)", "-"])
        else:
            for role in ("float32", "int8-weights"):
                facts = g.info.get(role, {})
                error = facts.get("relative_error")
                rows.append([model, f"conversion, {role}: {mib(facts.get('model_bytes'))}, error "
                             f"{'-' if error is None else f'{error:.1e}'}", str(g.rounds()), seconds(g.median(role)),
                             "-", "-", "-", "-", "-", "-"])
    headers = ["model", "quantity", "rounds", "litert", "jaxport", "jax.export", "jax.jit", "litert/peer",
               "goal", "met"]
    return ("LiteRT against JAX (median; fresh process = a whole child process, JAX's persistent "
            "compilation cache warm for jaxport and jax.export; error = largest difference to jax.jit "
            "over the output's largest magnitude)\n" + table(headers, rows))


ONNX_ROLES = ("onnx",)  # with iree, jax.export and jax.jit (benchmarks/test_onnx.py)
ONNX_FIRST_ANSWER_TARGET = 0.25  # a fresh process's first answer: load_converted / jax.export, JAX's cache warm
ONNX_PEAK_TARGET = 0.35  # its peak resident memory: load_converted / jax.export
ONNX_CALL_TARGET = 1.0  # a call with the weights resident: ONNX Runtime / jax.jit(f)


QUANTIZE_ROLES = ("float32", "int8-weights", "int8-dynamic", "int4-weights", "int8", "float16",
                  "quantize_dynamic", "ai-edge-quantizer")  # benchmarks/test_quantize.py
#: (target, mode) -> the goals of issue 39: size / float32 and time per call / float32 at b=8 (None: reported).
QUANTIZE_GOALS = {("ONNX", "int8-weights"): (0.30, None), ("ONNX", "int8-dynamic"): (0.30, 0.6),
                  ("ONNX", "int4-weights"): (0.20, None),
                  ("ONNX", "int8"): (0.30, 0.5), ("LiteRT", "int8-weights"): (None, None),
                  ("LiteRT", "int8-dynamic"): (None, None),
                  ("LiteRT", "float16"): (0.52, None), ("LiteRT", "int8"): (0.30, None)}


def quantize_section(groups: Sequence[Group]) -> str:
    """Each quantized mode against float32 (benchmarks/test_quantize.py): size and median per call."""
    rows = []
    for g in (g for g in groups if "float32" in g.samples):  # the peers' groups: peers_table
        for (target, mode), (size_goal, call_goal) in QUANTIZE_GOALS.items():
            if not g.name.startswith(target) or mode not in g.samples:
                continue
            base, made = (g.info.get(r, {}).get("bytes") for r in ("float32", mode))
            size = made / base if isinstance(made, int) and isinstance(base, int) and base else None
            rows.append([g.name, mode, mib(made), times(size), f"<= {size_goal}x" if size_goal else "-",
                         seconds(g.median(mode)), seconds(g.median("float32")), times(g.ratio(mode, "float32")),
                         f"<= {call_goal}x" if call_goal and g.name.endswith("b=8") else "-"])
    headers = ["group", "mode", "size", "size/float32", "goal", "per call", "float32", "call/float32", "goal"]
    return "Reduced precision against float32 (median)\n" + table(headers, rows) + peers_table(groups)


#: The goals of issue 52 against a peer: jaxport's error at most the peer's, its per call at most this.
PEER_CALL_GOAL = 1.05


def peers_table(groups: Sequence[Group]) -> str:
    """jaxport's quantized modes against the peer's quantization of the same float32 model (the groups
    whose roles carry ``peer``): size, error, per call and its ratio to the peer's."""
    rows = []
    for g in groups:
        peer = next((r for r, info in g.info.items() if info.get("peer") is True), None)
        if peer is None:
            continue
        theirs = g.info[peer].get("error")
        for role, info in g.info.items():
            error = info.get("error")
            within = isinstance(error, float) and isinstance(theirs, float) and error <= theirs
            ratio = g.ratio(role, peer)
            rows.append([g.name, role, mib(info.get("bytes")), f"{error:.2%}" if isinstance(error, float) else "-",
                         "-" if role == peer else ("yes" if within else "NO"), seconds(g.median(role)), times(ratio),
                         "-" if role == peer else _goal(ratio, PEER_CALL_GOAL)])
    if not rows:
        return ""
    headers = ["group", "role", "size", "error", "error <= peer's", "per call", "call/peer",
               f"<= {PEER_CALL_GOAL}x"]
    return "\n\nAgainst the peers (the same float32 model quantized by the peer; median)\n" + table(headers, rows)


def onnx_section(groups: Sequence[Group]) -> str:
    """ONNX Runtime against JAX and IREE: medians, ratios, the goal, whether it is met, the load average."""
    rows = []
    for g in groups:
        info = g.info.get("onnx", {})
        model, quantity = str(info.get("model", g.name)), str(info.get("quantity", ""))
        load = "/".join(str(g.info.get(r, {}).get("load", "-")) for r in g.info)
        weights = info.get("weights_bytes")
        if quantity == "first answer":
            ratio = g.ratio("onnx", "jax.export")
            rows.append([model, "first answer, fresh process", str(g.rounds()),
                         *(seconds(g.median(r)) for r in ("onnx", "iree", "jax.export")), "-",
                         times(ratio), times(g.ratio("onnx", "iree")), f"<= {ONNX_FIRST_ANSWER_TARGET}x",
                         _goal(ratio, ONNX_FIRST_ANSWER_TARGET), load])
            peaks = [g.info.get(r, {}).get("peak_bytes") for r in ("onnx", "iree", "jax.export")]
            ratios = [peaks[0] / p if isinstance(peaks[0], int) and isinstance(p, int) and p else None
                      for p in (peaks[2], peaks[1], weights)]
            rows.append([model, f"peak memory, fresh process ({times(ratios[2])} the weights)", str(g.rounds()),
                         *(mib(p) for p in peaks), "-", times(ratios[0]), times(ratios[1]),
                         f"<= {ONNX_PEAK_TARGET}x", _goal(ratios[0], ONNX_PEAK_TARGET), load])
        elif quantity == "per call":
            ratio = g.ratio("onnx", "jax.jit")
            rows.append([f"{model} b={info.get('batch', '-')}", "per call, weights resident", str(g.rounds()),
                         seconds(g.median("onnx")), seconds(g.median("iree")), "-", seconds(g.median("jax.jit")),
                         times(ratio), times(g.ratio("onnx", "iree")), f"<= {ONNX_CALL_TARGET}x",
                         _goal(ratio, ONNX_CALL_TARGET), load])
        else:
            rows.append([model, f"{quantity} (.onnx {_bytes(info.get('onnx_bytes'))}, weights {mib(weights)})",
                         str(g.rounds()), seconds(g.median("onnx")), "-", "-", "-", "-", "-", "-", "-", load])
    headers = ["model", "quantity", "rounds", "onnx", "iree", "jax.export", "jax.jit", "onnx/jax", "onnx/iree",
               "goal", "met", "load avg"]
    return ("ONNX Runtime against JAX and IREE (median; onnx/jax: against jax.export for a fresh process, "
            "JAX's persistent compilation cache warm, against jax.jit per call; load avg: the machine's "
            "1-minute load as each role ran)\n" + table(headers, rows))


def verify_section(groups: Sequence[Group]) -> str:
    """Cold loads with and without verification, what verifying adds, and ``import jax``."""
    rows = []
    for g in groups:
        unverified, verified = g.median("unverified"), g.median("verified")
        added = None if unverified is None or verified is None else verified - unverified
        import_jax = g.median("import jax")
        rows.append([g.name, str(g.rounds()), seconds(import_jax), seconds(unverified),
                     seconds(verified), seconds(added),
                     times(None if added is None or not import_jax else added / import_jax)])
    headers = ["group", "rounds", "python -c 'import jax'", "load verify=False", "load verify=True",
               "verification adds", "adds/import jax"]
    return ("Verification (median load in a fresh child process, after import jax and the backend's "
            "start;\nimport jax = the whole python -c 'import jax' process)\n" + table(headers, rows))


def runtime_section(groups: Sequence[Group]) -> str:
    """Eager calls by runtime: each role's median and its ratio to ``jax.jit``."""
    rows = []
    for g in groups:
        ratios = [g.ratio(role, "jax.jit") for role in RUNTIME_ROLES[1:]]
        tf_ratio = ratios[1]
        rows.append([g.name, str(g.rounds()), *(seconds(g.median(r)) for r in RUNTIME_ROLES),
                     *(times(r) for r in ratios),
                     "-" if tf_ratio is None else ("yes" if tf_ratio <= RUNTIME_TARGET else "NO")])
    headers = ["group", "rounds", *RUNTIME_ROLES, *(f"{r}/jax.jit" for r in RUNTIME_ROLES[1:]),
               f"TF within {RUNTIME_TARGET}x"]
    return (f"Eager call by runtime (median per call; timer {timer_names(groups)})\n"
            + table(headers, rows))


def savedmodel_section(groups: Sequence[Group]) -> str:
    """Conversions to a SavedModel: the time, against copying the weights, and the graph's size."""
    rows = []
    for g in groups:
        info = g.info.get("to_savedmodel", {})
        weights, graph = info.get("weights_bytes"), info.get("graph_bytes")
        share = graph / weights if isinstance(graph, int) and isinstance(weights, int) and weights else None
        rows.append([g.name, str(g.rounds()), *(seconds(g.median(r)) for r in CONVERSION_ROLES),
                     times(g.ratio(*CONVERSION_ROLES)), mib(weights), _bytes(graph),
                     mib(info.get("savedmodel_bytes")), "-" if share is None else f"{share:.3%}",
                     "-" if share is None else ("yes" if share < GRAPH_TARGET else "NO")])
    headers = ["group", "rounds", *CONVERSION_ROLES, "ratio", "weights", "saved_model.pb", "SavedModel",
               "pb/weights", f"pb under {GRAPH_TARGET:.0%}"]
    return "Conversion to a TensorFlow SavedModel (median)\n" + table(headers, rows)


#: The serving goals: the server's p50 at one client at most the runtime's own b=1 call plus this,
#: and the batched requests per second at 32 clients at least this share of the ideal gain.
SERVE_LATENCY_ALLOWANCE_S = 1e-3
SERVE_GAIN_SHARE = 0.5


def serving_section(groups: Sequence[Group]) -> str:
    """``jaxport serve`` under load: requests per second, p50 and p99 per model, runtime, clients and
    batching, with the runtime's own in-process call and the goals where they apply."""
    infos = [next(iter(g.info.values()), {}) for g in groups]
    rps = {(i.get("model"), i.get("runtime"), i.get("clients"), i.get("batching")): i.get("rps") for i in infos}
    rows = []
    for info in sorted(infos, key=lambda i: (str(i.get("model")), str(i.get("runtime")), str(i.get("batching")),
                                             int(i.get("clients", 0)))):
        model, runtime, clients, batching = info.get("model"), info.get("runtime"), info.get("clients"), \
            info.get("batching")
        call_b1, call_b32 = info.get("call_b1_s"), info.get("call_b32_s")
        goal, met = "-", "-"
        if clients == 1 and isinstance(call_b1, float) and isinstance(info.get("p50_s"), float):
            goal = f"p50 <= call b=1 ({seconds(call_b1)}) + 1 ms"
            met = "yes" if info["p50_s"] <= call_b1 + SERVE_LATENCY_ALLOWANCE_S else "NO"
        one = rps.get((model, runtime, 1, "off"))
        if clients == 32 and batching == "on" and isinstance(call_b1, float) and isinstance(call_b32, float) \
                and isinstance(one, float) and isinstance(info.get("rps"), float):
            ideal = 32 * call_b1 / call_b32
            gain = info["rps"] / one
            goal = f"gain {gain:.1f}x >= {SERVE_GAIN_SHARE:.0%} of ideal {ideal:.1f}x"
            # The goal is the MLP's; the transformer's gain is shown beside its ideal, not judged.
            met = ("yes" if gain >= SERVE_GAIN_SHARE * ideal else "NO") if str(model).startswith("MLP") else "-"
        b32 = f"{32 / call_b32:.0f}" if isinstance(call_b32, float) else "-"
        per_call = info.get("requests_per_call")
        rows.append([str(model), str(runtime), str(clients), str(batching), str(info.get("requests", "-")),
                     f"{info.get('rps', 0):.0f}", seconds(info.get("p50_s")), seconds(info.get("p99_s")),
                     f"{per_call:.1f}" if isinstance(per_call, float) else "-", seconds(call_b1), b32, goal, met])
    headers = ["model", "runtime", "clients", "batching", "requests", "requests/s", "p50", "p99", "req/call",
               "call b=1", "call b=32 rows/s", "goal", "met"]
    return "jaxport serve (one-row requests, tritonclient HTTP binary in its own process; " \
        "call: the runtime's own in-process call)\n" + table(headers, rows)


#: The roles of the runtime benchmarks that are baselines, not targets.
_BASELINE_ROLES = ("jax.export", "jax.jit")


#: A converted model's peak memory in a fresh process: at most this many times its weights plus the
#: runtime's own baseline (the runtime loaded with a trivial model, ``benchmarks/fresh_process.py``).
CONVERTED_PEAK_WEIGHTS = 1.5


def _over_weights(info: dict[str, Any]) -> tuple[str, str]:
    """The runtime's baseline, and peak / (1.5 x weights + baseline) with whether it is at most 1."""
    peak, weights, base = (info.get(k) for k in ("peak_bytes", "weights_bytes", "baseline_bytes"))
    if not (isinstance(peak, int) and isinstance(weights, int) and isinstance(base, int)):
        return mib(base), "-"
    ratio = peak / (CONVERTED_PEAK_WEIGHTS * weights + base)
    return mib(base), f"{times(ratio)} {_goal(ratio, 1.0)}"


def targets_section(groups: Sequence[Group]) -> str:
    """One table of every target (and the JAX path, ``jaxport``) per model: a fresh process's first
    answer and peak memory against ``jax.export``'s, and the time per call at b=1 and b=8 against
    ``jax.jit``'s, each ratio between roles of one group (one run); where several groups measured a
    role's first answer (the JAX path, ``jaxport``, beside each runtime), the median of their ratios. Per-call groups without a batch
    size call at b=1 (the models' arguments, :mod:`benchmarks.fresh_process`). The very first answer
    (``very_first_s``: the first process on the directory, jaxport's verdicts cold) is shown against the
    median of ``jax.export``'s. Where the first
    answer's benchmark recorded the runtime's own baseline (``baseline_bytes``) and the weights
    (``weights_bytes``), its peak memory against :data:`CONVERTED_PEAK_WEIGHTS` times the weights plus
    the baseline, with whether it is within (at most 1.00x)."""
    cells: dict[tuple[str, str], dict[str, str]] = {}
    pooled: dict[tuple[str, str], dict[str, list[float]]] = {}  # ratios measured in several groups
    for g in groups:
        if g.kind == "quantize":  # its roles are modes (float32, int8-weights), not targets
            continue
        for role, info in g.info.items():
            model, quantity = str(info.get("model", g.name)), str(info.get("quantity", ""))
            if role in _BASELINE_ROLES or quantity not in ("first answer", "per call"):
                continue  # a conversion's roles (LiteRT's float32, int8-weights) are not targets either
            row = cells.setdefault((model, role), {})
            ratios = pooled.setdefault((model, role), {})
            if quantity == "first answer":
                ratios.setdefault("first", []).append(g.ratio(role, "jax.export") or math.nan)
                very_first, theirs = info.get("very_first_s"), g.median("jax.export")
                if isinstance(very_first, float) and theirs:
                    row.setdefault("very first", times(very_first / theirs))
                peak, base = info.get("peak_bytes"), g.info.get("jax.export", {}).get("peak_bytes")
                if isinstance(peak, int) and isinstance(base, int) and base:
                    ratios.setdefault("peak", []).append(peak / base)
                if "baseline_bytes" in info:
                    baseline, over_weights = _over_weights(info)
                    row.setdefault("baseline", baseline)
                    row.setdefault("weights", over_weights)
            elif quantity == "per call":
                row.setdefault(f"b={info.get('batch', 1)}", times(g.ratio(role, "jax.jit")))
    for key, ratios in pooled.items():
        for column, values in ratios.items():
            known = [v for v in values if not math.isnan(v)]
            cells[key][column] = times(statistics.median(known) if known else None)
    rows = [[model, role, *(r.get(k, "-") for k in ("first", "very first", "peak", "baseline", "weights", "b=1",
                                                   "b=8"))]
            for (model, role), r in sorted(cells.items())]
    headers = ["model", "runtime", "first answer / jax.export", "very first / jax.export",
               "peak memory / jax.export", "runtime baseline",
               f"peak / ({CONVERTED_PEAK_WEIGHTS} weights + baseline)", "per call b=1 / jax.jit",
               "per call b=8 / jax.jit"]
    return ("Every target, ratios of one run (fresh processes with JAX's cache warm; per call with the "
            "weights resident; very first: the first process on a directory, jaxport's verdicts not yet "
            "remembered, the others found them; runtime baseline: the peak of a fresh process that loads a trivial model with "
            "the runtime alone and calls it; the sections below give the times, goals and load)\n"
            + table(headers, rows))


def render(groups: Sequence[Group]) -> str:
    """The report: one table per kind of group, then a summary of the ratios.

    The kinds come in the order export, wrap, dispatch, call, micro, coldstart, verify, scale,
    runtime, savedmodel, other; the summary lists every group that has both jaxport and jax.export.
    """
    sections: list[str] = []
    ordered: list[Group] = []
    runtimes = [g for g in groups if g.kind in ("iree", "litert", "onnx")]
    if runtimes:
        sections.append(targets_section(runtimes))
    by_kind = {"export": export_section, "wrap": wrap_section, "dispatch": dispatch_section,
               "call": call_section, "micro": micro_section, "coldstart": coldstart_section,
               "verify": verify_section, "scale": scale_section, "runtime": runtime_section,
               "savedmodel": savedmodel_section}
    for kind, section in by_kind.items():
        chosen = [g for g in groups if g.kind == kind]
        if chosen:
            sections.append(section(chosen))
            ordered += chosen
    others = [g for g in groups if g.kind not in by_kind
              and g.kind not in ("bundle", "iree", "litert", "serving", "onnx", "quantize", "generate")]
    if others:
        sections.append(other_section(others))
        ordered += others
    bundles = [g for g in groups if g.kind == "bundle"]
    if bundles:
        sections.append(bundle_section(bundles))
    ireed = [g for g in groups if g.kind == "iree"]
    if ireed:
        sections.append(iree_section(ireed))
    litert = [g for g in groups if g.kind == "litert"]
    if litert:
        sections.append(litert_section(litert))
    served = [g for g in groups if g.kind == "serving"]
    if served:
        sections.append(serving_section(served))
    quantized = [g for g in groups if g.kind == "quantize"]
    if quantized:
        sections.append(quantize_section(quantized))
    onnxed = [g for g in groups if g.kind == "onnx"]
    if onnxed:
        sections.append(onnx_section(onnxed))
    generated = [g for g in groups if g.kind == "generate"]
    if generated:
        sections.append(generate_section(generated))
    if not sections:
        return "No benchmark with a role (extra_info['role']) in this report."
    compared = [g for g in ordered if g.median("jaxport") is not None and g.median("jax.export") is not None]
    if compared:
        sections.append(summary_section(compared))
    return "\n\n".join(sections)




GENERATE_ONNX_TARGET = 1.1  # ONNX Runtime's generate: its speed against the hand-written loop's, at least
GENERATE_PEAK_TARGET = 1.05  # the peak of a 256-token loop against a 64-token one's, at most


def generate_section(groups: Sequence[Group]) -> str:
    """Generation: tokens per second of each role and its speed against jax.jit's loop; the peaks of long loops."""
    rows = []
    for g in groups:
        if g.name.startswith("generate peak memory"):
            continue
        tokens = int(next((i["tokens"] for i in g.info.values() if i.get("tokens")), 1))
        cells = []
        baseline = "genai" if g.median("genai") is not None else "jax.jit"  # the "tokens GenAI" groups
        for role in GENERATE_ROLES[:-1]:
            median = g.median(role)
            speed = g.ratio(baseline, role)
            cells.append("-" if median is None else f"{tokens / median:,.1f}/s ({times(speed)})")
        rows.append([g.name, str(g.rounds()), *cells])
    text = ("Generation (tokens per second, median; in brackets the speed against the jax.jit loop's, "
            "in the GenAI groups against GenAI's)\n"
            + table(["group", "rounds", *GENERATE_ROLES[:-1]], rows))
    hand = [[g.name, times(speed), f">= {GENERATE_ONNX_TARGET}x", "yes" if speed >= GENERATE_ONNX_TARGET else "NO"]
            for g in groups if g.name.startswith("generate tokens")
            for speed in [g.ratio("onnx loop", "onnx")] if speed is not None]
    if hand:
        text += "\n\nONNX Runtime's generate against the hand-written loop over its checked calls\n" + table(
            ["group", "onnx / onnx loop", "goal", "met"], hand)
    peaks = [[role, mib(info.get("peak_64")), mib(info.get("peak_256")), times(info.get("peak_ratio")),
              mib(info.get("cache_bytes")), _goal(info.get("peak_ratio"), GENERATE_PEAK_TARGET)]
             for g in groups if g.name.startswith("generate peak memory") for role, info in g.info.items()]
    if peaks:
        text += "\n\nPeak memory of a loop in a fresh process\n" + table(
            ["role", "64 tokens", "256 tokens", "256/64", "one cache", f"<= {GENERATE_PEAK_TARGET}x"], peaks)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("json", type=Path, help="the file that --benchmark-json wrote")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.json.read_text(encoding="utf-8"))
        groups = read_groups(report)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"report.py: cannot read {args.json}: {exc}", file=sys.stderr)
        return 1
    print(render(groups))
    return 0


if __name__ == "__main__":
    sys.exit(main())
