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
    assert rows == [["gpt", "iree", "-", "-", "2.00x", "-"], ["gpt", "onnx", "0.25x", "0.25x", "-", "0.90x"]]
