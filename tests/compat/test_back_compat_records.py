"""Compat: JAX's back-compatibility records for the CPU, run as raw modules.

``jax/_src/internal_test_util/export_back_compat_test_data`` holds, for each
custom-call target that JAX guarantees stable, StableHLO modules recorded
with their inputs and outputs at a past date (``mlir_module_serialized`` is
the portable artifact alone, not a whole ``Exported``). The 48 CPU records
(44 LAPACK records in ``cpu_*.py``, 4 in ``stablehlo_dynamic_*.py``; JAX
0.12.1 adds 4 of lgamma and digamma, ``cpu_lgamma.py``, ``cpu_digamma.py``) are
loaded here with :meth:`jaxport.Exported.from_module` and run on the CPU
under ``jax.jit``, as JAX's ``run_serialized`` does; the 4 dynamic ones take
the symbolic input specs that JAX's tests give them (``"_, b"``, ``"b + 4,"``,
``(None, "b0, b1")``).

Outputs are compared with the recorded ``expected_outputs`` by a plain
tolerance check where JAX's test does so (cholesky, qr, hessenberg,
tridiagonal, tridiagonal_solve, dynamic_rng_bit_generator), with JAX's
tolerances. Where JAX's test uses a custom checker because the results are
not unique (eigenvectors, pivots, Schur vectors, singular vectors, top-k
order), these tests assert the shapes and dtypes plus the property that the
checker verifies (reconstruction, eigenvalue sets, ...), not the raw values.

The f64 and c128 records need ``jax_enable_x64``: it is switched on only
inside these tests, by a fixture that restores it.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

DATA = "jax._src.internal_test_util.export_back_compat_test_data"
# The polymorphic_shapes that JAX's tests pass for the stablehlo_dynamic_* records.
POLYMORPHIC_SHAPES: dict[str, tuple[str | None, ...]] = {
    "stablehlo_dynamic_top_k": ("_, b",),
    "stablehlo_dynamic_approx_top_k": ("b + 4,",),
    "stablehlo_dynamic_rng_bit_generator": (None, "b0, b1"),
}
RTOL = {"f32": 1e-3, "c64": 1e-3, "f64": 1e-5, "c128": 1e-5}
ATOL = {"f32": 1e-4, "c64": 1e-4, "f64": 1e-12, "c128": 1e-12}


@dataclasses.dataclass(frozen=True, eq=False)
class Record:
    """One record of JAX's back-compatibility data."""

    module: str
    name: str
    dtype_name: str | None
    data: dict[str, Any]

    @property
    def id(self) -> str:
        return "-".join(p for p in (self.module, self.name, self.dtype_name) if p)

    @property
    def rtol(self) -> float:
        return RTOL[self.dtype_name] if self.dtype_name else 1e-7

    @property
    def atol(self) -> float:
        return ATOL[self.dtype_name] if self.dtype_name else 0.0

    @property
    def inputs(self) -> tuple[np.ndarray, ...]:
        return tuple(self.data["inputs"])

    @property
    def expected(self) -> tuple[np.ndarray, ...]:
        return tuple(self.data["expected_outputs"])


def cpu_records() -> list[Record]:
    package = importlib.import_module(DATA)
    records = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith(("cpu_", "stablehlo_dynamic_")):
            continue
        module = importlib.import_module(f"{DATA}.{info.name}")
        for name, value in vars(module).items():
            if not name.startswith("data_"):
                continue
            nest = {None: value} if "testdata_version" in value else value
            records += [Record(info.name, name, key, data) for key, data in nest.items()
                        if data["platform"] == "cpu"]
    return records


RECORDS = cpu_records()
PARAMS = [pytest.param(r, id=r.id) for r in RECORDS]


@pytest.fixture
def x64() -> Iterator[None]:
    with jax.enable_x64(True):
        yield


#: The lgamma and digamma records (f32 and f64 each) that JAX 0.12.1 added.
SPECIAL_RECORDS = 4 if tuple(int(p) for p in jax.__version__.split(".")[:3]) >= (0, 12, 1) else 0


def test_there_are_48_cpu_records_44_of_them_lapack_and_4_special_functions_from_jax_0_12_1() -> None:
    assert len(RECORDS) == 48 + SPECIAL_RECORDS
    assert sum(r.module.startswith("cpu_") for r in RECORDS) == 44 + SPECIAL_RECORDS
    assert sum(r.module in ("cpu_lgamma", "cpu_digamma") for r in RECORDS) == SPECIAL_RECORDS


# --------------------------------------------------------------------------
# Checks: plain tolerance where JAX's test uses one, else JAX's checker's property
# --------------------------------------------------------------------------
def assert_close(got: Any, want: Any, r: Record) -> None:
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=r.rtol, atol=r.atol)


def hermitian(a: np.ndarray) -> np.ndarray:
    return np.asarray(np.conj(np.swapaxes(a, -1, -2)))


def check_plain(out: tuple[np.ndarray, ...], r: Record) -> None:
    for got, want in zip(out, r.expected):
        assert_close(got, want, r)


def check_eig(out: tuple[np.ndarray, ...], r: Record) -> None:
    # As JAX's checker: each eigenvalue is in the other set; both eigenvector sets fit.
    w, vl, vr = out
    operand = np.arange(16, dtype=w.dtype).reshape(4, 4)
    for mine, others in ((w, r.expected[0]), (r.expected[0], w)):
        closest = np.min(np.abs(others[None, :] - mine[:, None]), axis=1)
        np.testing.assert_allclose(closest, np.zeros_like(closest), atol=r.atol)
    scale = 5 * np.finfo(w.dtype).eps
    assert np.linalg.norm(operand @ vr - w[None, :] * vr) / scale < 100
    assert np.linalg.norm(hermitian(operand) @ vl - np.conj(w)[None, :] * vl) / scale < 100


def check_eigh(out: tuple[np.ndarray, ...], r: Record) -> None:
    v, w = out
    base = np.arange(64, dtype=v.dtype).reshape(8, 8)
    operand = (base + hermitian(base)) / 2
    assert np.linalg.norm(np.eye(8) - hermitian(v) @ v) <= r.rtol
    assert np.linalg.norm(operand @ v - w[None, :].astype(v.dtype) * v) <= r.rtol * np.linalg.norm(operand)
    assert_close(w, r.expected[1], r)


def check_lu(out: tuple[np.ndarray, ...], r: Record) -> None:
    lu, _, permutation = out
    operand = np.arange(9, dtype=lu.dtype).reshape(3, 3)
    lower, upper = np.tril(lu, -1) + np.eye(3, dtype=lu.dtype), np.triu(lu)
    assert_close(operand[permutation], lower @ upper, r)


def check_schur(out: tuple[np.ndarray, ...], r: Record) -> None:
    t, s = out
    assert_close(r.inputs[0], s @ t @ hermitian(s), r)


def check_svd(out: tuple[np.ndarray, ...], r: Record) -> None:
    u, s, vh = out
    a = r.inputs[0]
    rebuilt = (u * s[..., None, :].astype(u.dtype)) @ vh
    error = np.linalg.norm(a - rebuilt, axis=(-2, -1)) / np.linalg.norm(a, axis=(-2, -1))
    assert np.max(error) < 160 * np.finfo(a.dtype).eps


def check_triangular_solve(out: tuple[np.ndarray, ...], r: Record) -> None:
    a, b = r.inputs
    assert_close(np.tril(a) @ out[0], b, r)


def check_top_k(out: tuple[np.ndarray, ...], r: Record) -> None:
    values, indices = out
    a = r.inputs[0]
    taken = a[np.arange(a.shape[0])[:, None], indices] if a.ndim == 2 else a[indices]
    np.testing.assert_array_equal(values, taken)
    np.testing.assert_allclose(np.sort(values), np.sort(r.expected[0]))


CHECKS: dict[str, Callable[[tuple[np.ndarray, ...], Record], None]] = {
    "cpu_cholesky_lapack_potrf": check_plain,
    "cpu_qr_lapack_geqrf": check_plain,
    "cpu_hessenberg_lapack_gehrd": check_plain,
    "cpu_tridiagonal_lapack_sytrd_hetrd": check_plain,
    "cpu_tridiagonal_solve_lapack_gtsv": check_plain,
    "stablehlo_dynamic_rng_bit_generator": check_plain,
    "cpu_eig_lapack_geev": check_eig,
    "cpu_eigh_lapack_syev": check_eigh,
    "cpu_lu_lapack_getrf": check_lu,
    "cpu_schur_lapack_gees": check_schur,
    "cpu_svd_lapack_gesdd": check_svd,
    "cpu_triangular_solve_blas_trsm": check_triangular_solve,
    "stablehlo_dynamic_top_k": check_top_k,
    "stablehlo_dynamic_approx_top_k": check_top_k,
    "cpu_lgamma": check_plain,  # elementwise, one answer per input
    "cpu_digamma": check_plain,
}


def test_every_record_module_has_a_check() -> None:
    assert {r.module for r in RECORDS} == set(CHECKS) - (set() if SPECIAL_RECORDS else {"cpu_lgamma", "cpu_digamma"})


# --------------------------------------------------------------------------
# Running the records
# --------------------------------------------------------------------------
def input_specs(r: Record) -> tuple[Any, ...]:
    shapes = POLYMORPHIC_SHAPES.get(r.module)
    if shapes is None:
        return r.inputs
    return tuple(jaxport.symbolic_args_specs(r.inputs, shapes))


def run(r: Record) -> tuple[np.ndarray, ...]:
    exp = jaxport.Exported.from_module(
        r.data["mlir_module_serialized"], in_specs=input_specs(r), out_specs=r.expected,
        platforms=(r.data["platform"],), calling_convention_version=r.data["xla_call_module_version"],
        nr_devices=r.data.get("nr_devices", 1), fun_name=r.id)
    return tuple(np.asarray(o) for o in jax.jit(exp.call)(*r.inputs))


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("record", PARAMS)
def test_a_cpu_record_runs_as_a_raw_module_and_gives_its_recorded_outputs(record: Record) -> None:
    out = run(record)
    assert [(o.shape, o.dtype) for o in out] == [(e.shape, e.dtype) for e in record.expected]
    CHECKS[record.module](out, record)


def test_x64_is_off_again_after_the_records_tests() -> None:
    # Runs after the tests above (file order): the fixture restored the flag.
    assert jnp.zeros((), float).dtype == np.float32
