"""The benchmark report's table of every target (``benchmarks/report.py``), on made-up groups."""

from __future__ import annotations

from benchmarks.report import Group, targets_section


def test_every_target_gets_one_row_of_ratios_from_its_groups() -> None:
    first = Group("ONNX first answer: gpt", "onnx", "-", {"onnx": [1.0, 1.0], "jax.export": [4.0, 4.0]},
                  info={"onnx": {"model": "gpt", "quantity": "first answer", "peak_bytes": 100},
                        "jax.export": {"model": "gpt", "quantity": "first answer", "peak_bytes": 400}})
    call = Group("ONNX per call: gpt b=8", "onnx", "-", {"onnx": [0.9], "jax.jit": [1.0]},
                 info={"onnx": {"model": "gpt", "quantity": "per call", "batch": 8},
                       "jax.jit": {"model": "gpt", "quantity": "per call", "batch": 8}})
    iree = Group("IREE per call: gpt", "iree", "-", {"iree": [2.0], "jax.jit": [1.0]},
                 info={"iree": {"model": "gpt", "quantity": "per call"}})
    lines = targets_section([first, call, iree]).splitlines()
    rows = [line.split() for line in lines[3:]]
    assert rows == [["gpt", "iree", "-", "-", "-", "-", "-", "2.00x", "-"],
                    ["gpt", "onnx", "0.25x", "-", "0.25x", "-", "-", "-", "0.90x"]]


def test_modes_and_conversions_are_not_targets() -> None:
    """The quantize benchmark's modes and LiteRT's conversions (roles float32, int8-weights) get no row."""
    quantize = Group("ONNX quantized per call: gpt b=8", "quantize", "-",
                     {"float32": [1.0], "int8-weights": [0.5]},
                     info={"float32": {"model": "gpt", "quantity": "per call", "batch": 8},
                           "int8-weights": {"model": "gpt", "quantity": "per call", "batch": 8}})
    conversion = Group("LiteRT conversion: gpt", "litert", "-", {"float32": [1.0], "int8-weights": [2.0]},
                       info={"float32": {"model": "gpt", "quantity": "conversion"},
                             "int8-weights": {"model": "gpt", "quantity": "conversion"}})
    call = Group("LiteRT per call: gpt", "litert", "-", {"litert": [1.5], "jax.jit": [1.0]},
                 info={"litert": {"model": "gpt", "quantity": "per call"},
                       "jax.jit": {"model": "gpt", "quantity": "per call"}})
    rows = [line.split() for line in targets_section([quantize, conversion, call]).splitlines()[3:]]
    assert rows == [["gpt", "litert", "-", "-", "-", "-", "-", "1.50x", "-"]]


def test_peak_memory_against_the_weights_and_the_runtimes_baseline() -> None:
    """peak / (1.5 x weights + baseline): 3 MiB over 1.5 x 2 MiB + 1 MiB, 0.75x: within; the very first
    answer (2 s) against jax.export's median (4 s)."""
    mib = 1 << 20
    first = Group("IREE first answer: gpt", "iree", "-", {"iree": [1.0], "jax.export": [4.0]},
                  info={"iree": {"model": "gpt", "quantity": "first answer", "peak_bytes": 3 * mib,
                                 "weights_bytes": 2 * mib, "baseline_bytes": mib, "very_first_s": 2.0},
                        "jax.export": {"model": "gpt", "quantity": "first answer", "peak_bytes": 6 * mib}})
    rows = [line.split() for line in targets_section([first]).splitlines()[3:]]
    assert rows == [["gpt", "iree", "0.25x", "0.50x", "0.50x", "1.0", "MiB", "0.75x", "yes", "-", "-"]]


def test_a_role_measured_in_several_groups_gets_the_median_of_its_ratios() -> None:
    """The JAX path's first answer is measured beside each runtime: 0.8x, 0.9x and 1.0x give 0.90x."""
    groups = [Group(f"{target} first answer: gpt", target, "-", {"jaxport": [mine], "jax.export": [1.0]},
                    info={"jaxport": {"model": "gpt", "quantity": "first answer", "peak_bytes": 3},
                          "jax.export": {"model": "gpt", "quantity": "first answer", "peak_bytes": 4}})
              for target, mine in (("iree", 0.8), ("litert", 1.0), ("onnx", 0.9))]
    rows = [line.split() for line in targets_section(groups).splitlines()[3:]]
    assert rows == [["gpt", "jaxport", "0.90x", "-", "0.75x", "-", "-", "-", "-"]]
