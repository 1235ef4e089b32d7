"""Compat: every record of JAX's back-compatibility data, run through JAX's own harness by jaxport and by jax.export.

``jax/_src/internal_test_util/export_back_compat_test_data`` (and its ``pallas``
package) holds, for each custom-call target that JAX guarantees stable,
StableHLO modules recorded with their inputs and outputs at a past date
(``mlir_module_serialized`` is the portable artifact alone, not a whole
``Exported``): 149 records on JAX 0.12.1, the lgamma and digamma ones of
0.12.1 among them, for the CPU, TPU, CUDA and ROCm. (The ``export_with_*``
modules hold whole serialized artifacts instead: tests/compat/test_jax_wheel_blobs.py
reads them.) Every record is found here, by walking every module-level value
of every module of the package, and loaded with the harness's
``load_testdata``; each then goes through the harness's ``run_serialized``
(``export_back_compat_test_util``), which builds an ``Exported`` around the
record's module and calls it under ``jit``, twice: with the harness's
``_export`` pointed at jaxport (``jaxport.Exported``) and unchanged
(``jax.export``). The 4 ``stablehlo_dynamic_*`` records take the symbolic
input specs that JAX's tests give them (``"_, b"``, ``"b + 4,"``, ``(None, "b0,
b1")``, ``"b, ..."`` for each input).

* A record of this machine's platform (every CPU record, here) is called
  both ways: the outputs have the recorded shapes and dtypes, pass the
  check below, and match jax.export's within the record's tolerance.
* A record of another platform is refused by both at the call, as JAX's
  harness refuses it ("exported for platforms ... but it is used on ..."),
  jaxport by its typed ``PlatformMismatchError``; and the ``Exported`` that
  each built around it is serialized and read by the other with the same fields.

Outputs are compared with the recorded ``expected_outputs`` by a plain
tolerance check where JAX's test does so (cholesky, qr, hessenberg,
tridiagonal, tridiagonal_solve, dynamic_rng_bit_generator, lgamma, digamma),
with JAX's tolerances. Where JAX's test uses a custom checker because the results are
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
import types
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.internal_test_util import export_back_compat_test_util as bctu

import jaxport
from jaxport.adapters.jax.installed import release
from jaxport.domain.artifact.calling_convention import MINIMUM_VERSION as MINIMUM_CALLING_CONVENTION
from jaxport.errors import ArtifactError, JaxportError

DATA = "jax._src.internal_test_util.export_back_compat_test_data"
# The polymorphic_shapes that JAX's tests pass for the dynamic-shape records.
POLYMORPHIC_SHAPES: dict[str, tuple[str | None, ...]] = {
    "stablehlo_dynamic_top_k": ("_, b",),
    "stablehlo_dynamic_approx_top_k": ("b + 4,",),
    "stablehlo_dynamic_rng_bit_generator": (None, "b0, b1"),
}
# The records whose every input JAX's tests give this one spec.
POLYMORPHIC_EACH = {"tpu_stablehlo_dynamic_reduce_window": "b, ..."}
RTOL = {"f32": 1e-3, "c64": 1e-3, "f64": 1e-5, "c128": 1e-5}
ATOL = {"f32": 1e-4, "c64": 1e-4, "f64": 1e-12, "c128": 1e-12}
# The modules of whole serialized artifacts, not records (tests/compat/test_jax_wheel_blobs.py).
BLOB_MODULES = ("export_with_",)
# The harness, for its loader and its run_serialized (neither uses the test case's state).
HARNESS = bctu.CompatTestBase("run_serialized")
# The harness's `_export` as JAX ships it, and one holding jaxport's names in its stead.
JAX_EXPORT = bctu._export  # type: ignore[attr-defined]  # the harness's module global, swapped below
JAXPORT = types.SimpleNamespace(export=jaxport.export, Exported=jaxport.Exported,
                                DisabledSafetyCheck=jaxport.DisabledSafetyCheck)


@dataclasses.dataclass(frozen=True, eq=False)
class Record:
    """One record of JAX's back-compatibility data: where it is, and the harness's ``CompatTestData``."""

    module: str
    path: str
    data: bctu.CompatTestData

    @property
    def id(self) -> str:
        return f"{self.module}-{self.path}"

    @property
    def dtype_name(self) -> str | None:
        last = self.path.rpartition("-")[2]
        return last if last in RTOL else None

    @property
    def polymorphic_shapes(self) -> tuple[str | None, ...] | None:
        """The ``polymorphic_shapes`` that JAX's test of the record passes, or None."""
        if self.module in POLYMORPHIC_EACH:
            return (POLYMORPHIC_EACH[self.module],) * len(self.inputs)
        return POLYMORPHIC_SHAPES.get(self.module)

    @property
    def rtol(self) -> float:
        return RTOL[self.dtype_name] if self.dtype_name else 1e-7

    @property
    def atol(self) -> float:
        return ATOL[self.dtype_name] if self.dtype_name else 0.0

    @property
    def inputs(self) -> tuple[np.ndarray, ...]:
        return tuple(self.data.inputs)

    @property
    def expected(self) -> tuple[np.ndarray, ...]:
        return tuple(self.data.expected_outputs)


def _nests(value: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every record dict in ``value`` (a record, or dicts and lists of them), with its path."""
    if isinstance(value, dict) and "testdata_version" in value:
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _nests(item, f"{path}-{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _nests(item, f"{path}-{index}")


def data_modules() -> list[str]:
    """The modules of the data package and its subpackages, by their names below it (``pallas.mosaic_matmul``)."""
    package = importlib.import_module(DATA)
    return sorted(info.name.removeprefix(f"{DATA}.") for info in pkgutil.walk_packages(package.__path__, f"{DATA}.")
                  if not info.ispkg)


def all_records() -> list[Record]:
    records = []
    for name in data_modules():
        module = importlib.import_module(f"{DATA}.{name}")
        for variable, value in vars(module).items():
            records += [Record(name, path, HARNESS.load_testdata(data)) for path, data in _nests(value, variable)]
    return records


RECORDS = all_records()
BACKEND = jax.default_backend()
HERE = [pytest.param(r, id=r.id) for r in RECORDS if r.data.platform == BACKEND]
ELSEWHERE = [pytest.param(r, id=r.id) for r in RECORDS if r.data.platform != BACKEND]


@pytest.fixture
def x64() -> Iterator[None]:
    with jax.enable_x64(True):
        yield


def test_every_module_of_the_data_package_gives_records_but_the_whole_artifacts() -> None:
    found = {r.module for r in RECORDS}
    assert found == {m for m in data_modules() if not m.startswith(BLOB_MODULES)}
    assert len({r.id for r in RECORDS}) == len(RECORDS)
    if release(jax.__version__) >= (0, 12, 1):
        assert {"cpu_lgamma", "cpu_digamma", "cuda_lgamma", "cuda_digamma"} <= found


def test_the_cpu_records_are_the_lapack_the_dynamic_and_from_jax_0_12_1_the_lgamma_digamma_ones() -> None:
    cpu = {r.module for r in RECORDS if r.data.platform == "cpu"}
    special = {"cpu_lgamma", "cpu_digamma"} if release(jax.__version__) >= (0, 12, 1) else set()
    assert cpu == set(CHECKS) - ({"cpu_lgamma", "cpu_digamma"} - special)
    assert sum(r.data.platform == "cpu" for r in RECORDS) == 48 + 2 * len(special)  # f32 and f64 of each


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
    "cpu_lgamma": check_plain,
    "cpu_digamma": check_plain,
    "stablehlo_dynamic_top_k": check_top_k,
    "stablehlo_dynamic_approx_top_k": check_top_k,
}


def test_every_cpu_record_module_has_a_check() -> None:
    assert {r.module for r in RECORDS if r.data.platform == "cpu"} <= set(CHECKS)


# --------------------------------------------------------------------------
# Running the records through JAX's harness, by jaxport and by jax.export
# --------------------------------------------------------------------------
def run_serialized(r: Record, export: Any) -> tuple[np.ndarray, ...]:
    """The harness's ``run_serialized`` of ``r`` with its ``_export`` set to ``export`` (restored after)."""
    bctu._export = export  # type: ignore[attr-defined]
    try:
        out = HARNESS.run_serialized(r.data, polymorphic_shapes=r.polymorphic_shapes)  # type: ignore[arg-type]
    finally:
        bctu._export = JAX_EXPORT  # type: ignore[attr-defined]
    return tuple(np.asarray(o) for o in out)


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("record", HERE)
def test_a_record_of_this_platform_runs_through_jaxport_as_through_jax_export(record: Record) -> None:
    ours, theirs = run_serialized(record, JAXPORT), run_serialized(record, JAX_EXPORT)
    assert [(o.shape, o.dtype) for o in ours] == [(e.shape, e.dtype) for e in record.expected]
    check = CHECKS.get(record.module)
    if check is not None:
        check(ours, record)
    for got, want in zip(ours, theirs):
        np.testing.assert_allclose(got, want, rtol=record.rtol, atol=record.atol)


def _built(r: Record, export: Any) -> tuple[Any, ValueError]:
    """The ``Exported`` that the harness builds around ``r`` with ``export``'s ``Exported``, and the call's refusal."""
    made = []

    def exported(**fields: Any) -> Any:
        made.append(export.Exported(**fields))
        return made[-1]

    with pytest.raises(ValueError) as refused:
        run_serialized(r, types.SimpleNamespace(Exported=exported))
    return made[0], refused.value


@pytest.mark.usefixtures("x64")
@pytest.mark.parametrize("record", ELSEWHERE)
def test_a_record_of_another_platform_is_refused_by_both_and_serializes_both_ways(record: Record) -> None:
    ours, ours_refusal = _built(record, JAXPORT)
    theirs, their_refusal = _built(record, JAX_EXPORT)
    # The same refusal (the platform, or first the device count of a 2-device record), jaxport's typed.
    assert isinstance(ours_refusal, JaxportError)
    assert str(ours_refusal).startswith(str(their_refusal).split(". ")[0])
    read_by_jax = jax.export.deserialize(bytearray(ours.serialize()))
    if record.data.xla_call_module_version < MINIMUM_CALLING_CONVENTION:
        # jaxport's deserialize refuses what this JAX cannot call (docs/jax-export.md); jax.export's reads it.
        with pytest.raises(ArtifactError, match=f"calling convention version {record.data.xla_call_module_version} "
                                                f"is outside the range of supported versions"):
            jaxport.deserialize(theirs.serialize())
        read: list[Any] = [read_by_jax]
    else:
        read = [read_by_jax, jaxport.deserialize(theirs.serialize())]
    for exp in read:
        assert exp.platforms == (record.data.platform,)
        assert [(str(a.shape), a.dtype) for a in exp.in_avals] == [(str(a.shape), a.dtype) for a in theirs.in_avals]
        assert [(a.shape, a.dtype) for a in exp.out_avals] == [(e.shape, e.dtype) for e in record.expected]
        assert bytes(exp.mlir_module_serialized) == record.data.mlir_module_serialized
        assert exp.calling_convention_version == record.data.xla_call_module_version
        assert exp.nr_devices == record.data.nr_devices


def test_x64_is_off_again_after_the_records_tests() -> None:
    # Runs after the tests above (file order): the fixture restored the flag.
    assert jnp.zeros((), float).dtype == np.float32
