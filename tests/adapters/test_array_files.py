"""The NumPy and safetensors files that ``jaxport run`` and ``jaxport export --params`` read."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from safetensors.numpy import save_file

from jaxport.adapters.storage.array_files import read_arrays, read_named_arrays, write_arrays
from jaxport.errors import ArrayFileError


def test_npy_and_npz_files_give_positional_then_keyword_arrays_in_order(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.zeros(2))
    np.savez(tmp_path / "b.npz", np.ones(1), np.full(3, 2.0), scale=np.float32(3))
    inputs = read_arrays([tmp_path / "a.npy", tmp_path / "b.npz"])
    assert [a.tolist() for a in inputs.args] == [[0.0, 0.0], [1.0], [2.0, 2.0, 2.0]]
    assert list(inputs.kwargs) == ["scale"] and inputs.kwargs["scale"] == 3


def test_a_gap_in_the_positional_names_and_a_repeated_keyword_are_refused(tmp_path: Path) -> None:
    np.savez(tmp_path / "gap.npz", arr_0=np.ones(1), arr_2=np.ones(1))
    with pytest.raises(ArrayFileError, match="found arr_2 but no arr_1"):
        read_arrays([tmp_path / "gap.npz"])
    np.savez(tmp_path / "k.npz", k=np.ones(1))
    with pytest.raises(ArrayFileError, match="keyword array 'k' is given twice"):
        read_arrays([tmp_path / "k.npz", tmp_path / "k.npz"])


def test_pickled_and_foreign_files_are_refused_without_running_them(tmp_path: Path) -> None:
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "text.npz").write_text("hello")
    for name in ("objects.npy", "text.npz"):
        with pytest.raises(ArrayFileError, match=f"{name} is not a readable .npy or .npz file"):
            read_arrays([tmp_path / name])
    with pytest.raises(FileNotFoundError, match="no such input file"):
        read_arrays([tmp_path / "missing.npz"])


def test_written_arrays_read_back_as_positional(tmp_path: Path) -> None:
    write_arrays(tmp_path / "out.npz", [np.arange(3), np.eye(2)])
    back = read_arrays([tmp_path / "out.npz"])
    assert len(back.args) == 2 and back.args[1].tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_named_weights_come_from_safetensors_and_npz(tmp_path: Path) -> None:
    weights = {"dense/w": np.ones((2, 3), np.float32), "emb": np.arange(4, dtype=ml_dtypes.bfloat16)}
    save_file(weights, str(tmp_path / "w.safetensors"))
    got = read_named_arrays(tmp_path / "w.safetensors")
    assert sorted(got) == ["dense/w", "emb"] and got["emb"].dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got["dense/w"], weights["dense/w"])
    named: dict[str, np.ndarray] = {"dense/w": weights["dense/w"]}
    np.savez(tmp_path / "w.npz", **named)  # type: ignore[arg-type]  # numpy's stub: kwargs of bool
    assert list(read_named_arrays(tmp_path / "w.npz")) == ["dense/w"]


def test_weights_need_names_and_a_readable_header(tmp_path: Path) -> None:
    np.savez(tmp_path / "positional.npz", np.ones(2))
    with pytest.raises(ArrayFileError, match="weights need names"):
        read_named_arrays(tmp_path / "positional.npz")
    (tmp_path / "bad.safetensors").write_bytes(b"\xff" * 16)
    with pytest.raises(ArrayFileError, match="is not a readable safetensors file"):
        read_named_arrays(tmp_path / "bad.safetensors")
