"""The user corpus's ``jax.numpy`` reductions, sorting, shapes, indexing and products."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.ndimage as ndimage
import jax.scipy.signal as signal
import numpy as np

from .onnx_corpus import Case
from .onnx_user_corpus import EDGES, F32, I32, arrays, case, ints

X = arrays(4, 6, seed=11)
Y = arrays(6, 3, seed=12)
B = arrays(2, 4, 6, seed=13)
#: Rows with NaN and infinities in them.
NANS = np.where(np.random.default_rng(14).random((4, 6)) < 0.25, np.nan, X).astype(F32)
NANS[1, 2], NANS[3, 0] = np.inf, -np.inf
EMPTY = np.zeros((0, 5), F32)
V = arrays(9, seed=15)
I = ints(-20, 20, 4, 6, seed=16)
IDX = np.array([3, 0, 5, 1, 1], I32)
SORTED = np.array([-np.inf, -2.0, -0.0, 0.0, 0.5, 0.5, 3.0, np.inf], F32)


#: How a case names the data it reduces.
_DATA = {id(NANS): "rows with NaN", id(X): "normal", id(EMPTY): "empty", id(B): "batched", id(I): "int32"}


def _reduction(name: str, data: np.ndarray = NANS, tolerance: float | None = None, **kw: object) -> Case:
    function = getattr(jnp, name)
    label = ", ".join(f"{k}={v}" for k, v in kw.items())
    return case(f"jnp.{name}({label}) {_DATA[id(data)]}", lambda x: function(x, **kw), data, tolerance=tolerance)


CASES: list[Case] = [
    # reductions
    *(_reduction(n, axis=1) for n in ("sum", "mean", "prod", "max", "min", "std", "var", "argmax", "argmin",
                                      "nansum", "nanmean", "nanmax", "nanmin", "nanstd", "nanvar", "ptp", "any",
                                      "all", "count_nonzero", "median", "nanprod")),
    *(_reduction(n, data=X) for n in ("sum", "mean", "max", "argmax", "median", "std", "prod")),
    _reduction("sum", data=EMPTY, axis=0), _reduction("max", data=EMPTY, axis=0, initial=-1.0),
    _reduction("prod", data=EMPTY, axis=0), _reduction("mean", data=B, axis=(0, 2)),
    _reduction("sum", data=I, axis=0), _reduction("max", data=I, axis=1), _reduction("argmin", data=I, axis=0),
    case("jnp.percentile", lambda x: jnp.percentile(x, jnp.array([0.0, 25.0, 50.0, 90.0]), axis=1), X),
    case("jnp.quantile nearest", lambda x: jnp.quantile(x, 0.3, axis=0, method="nearest"), X),
    case("jnp.nanpercentile", lambda x: jnp.nanpercentile(x, 40.0, axis=1), NANS),
    case("jnp.average weighted", lambda x, w: jnp.average(x, axis=1, weights=w), X, np.abs(V[:6])),
    case("jnp.cumsum", lambda x: jnp.cumsum(x, axis=1), NANS),
    case("jnp.cumprod", lambda x: jnp.cumprod(x, axis=0), X),
    case("jnp.nancumsum", lambda x: jnp.nancumsum(x, axis=1), NANS),
    case("jnp.cumsum int", lambda x: jnp.cumsum(x), I),
    case("jnp.diff and ediff1d", lambda x: (jnp.diff(x, axis=1), jnp.diff(x, n=2), jnp.ediff1d(x)), X),
    case("jnp.trapezoid", lambda y: jnp.trapezoid(y, dx=0.5, axis=1), X),
    case("logsumexp by hand", lambda x: jnp.log(jnp.sum(jnp.exp(x - x.max(1, keepdims=True)), 1)) + x.max(1), X),
    case("batched norms", lambda x: (jnp.sqrt(jnp.sum(x * x, -1)), jnp.abs(x).max(-1)), B),
    case("argmax argmin of all-NaN rows and ties", lambda x: (jnp.argmax(x, 1), jnp.argmin(x, 1), jnp.max(x, 1)),
         np.array([[np.nan, np.nan, np.nan], [1.0, 1.0, 0.0], [-0.0, 0.0, -0.0], [np.inf, np.nan, -np.inf]], F32)),
    case("jnp.cumsum and cummax with NaN and inf", lambda x: (jnp.cumsum(x), jax.lax.cummax(x), jax.lax.cummin(x)),
         EDGES),
    case("int cumsum and sum wrap", lambda x: (jnp.cumsum(x), jnp.sum(x), jnp.prod(x)),
         np.array([2**31 - 1, 5, -2**31, 2**30, 2**30, 3], I32)),
    # sorting and searching
    case("lax.top_k with NaN and infinities", lambda x: jax.lax.top_k(x, 5), EDGES),
    case("jnp.argsort with NaN and signed zeros", lambda x: jnp.argsort(x, stable=True), EDGES),
    case("jnp.sort with NaN", lambda x: jnp.sort(x, axis=1), NANS),
    case("jnp.sort edges", jnp.sort, EDGES),
    case("jnp.argsort stable", lambda x: jnp.argsort(x, axis=1, stable=True), np.round(X)),
    case("jnp.argsort descending", lambda x: jnp.argsort(x, descending=True), V),
    case("jnp.sort int", lambda x: jnp.sort(x, axis=0), I),
    case("jnp.lexsort", lambda a, b: jnp.lexsort((a, b)), ints(0, 3, 10, seed=17), ints(0, 3, 10, seed=18)),
    case("jnp.searchsorted", lambda a, v: jnp.searchsorted(a, v), SORTED, EDGES),
    case("jnp.searchsorted right", lambda a, v: jnp.searchsorted(a, v, side="right"), SORTED, EDGES),
    case("jnp.digitize", lambda x, bins: jnp.digitize(x, bins), V, np.array([-1.0, 0.0, 0.5, 1.0], F32)),
    case("jax.lax.top_k", lambda x: jax.lax.top_k(x, 3), X),
    case("jnp.partition", lambda x: jnp.partition(x, 2, axis=1), X),
    case("jnp.unique with size", lambda x: jnp.unique(x, size=8, fill_value=-1), ints(0, 6, 12, seed=19)),
    case("jnp.bincount", lambda x: jnp.bincount(x, length=6), ints(0, 6, 20, seed=20)),
    case("jnp.histogram", lambda x: jnp.histogram(x, bins=5, range=(-2.0, 2.0)), V),
    case("jnp.nonzero with size", lambda x: jnp.nonzero(x > 0, size=10, fill_value=-1), X),
    case("jnp.argwhere with size", lambda x: jnp.argwhere(x > 0.5, size=6), X),
    case("jnp.flatnonzero with size", lambda x: jnp.flatnonzero(x, size=7), ints(-1, 2, 12, seed=21)),
    # shapes
    case("reshape transpose", lambda x: x.reshape(3, 8).T.reshape(2, 12), X),
    case("jnp.concatenate and stack", lambda x, y: (jnp.concatenate([x, x * 2], 1), jnp.stack([x, x], -1)), X, X),
    case("jnp.split", lambda x: jnp.split(x, 3, axis=1), X),
    case("jnp.array_split", lambda x: jnp.array_split(x, 4, axis=1), X),
    case("jnp.tile and repeat", lambda x: (jnp.tile(x, (2, 1)), jnp.repeat(x, 2, axis=0)), X),
    case("jnp.repeat with counts", lambda x: jnp.repeat(x, jnp.array([1, 0, 2, 3]), axis=0, total_repeat_length=6),
         X),
    case("jnp.flip roll rot90", lambda x: (jnp.flip(x), jnp.roll(x, 2, axis=1), jnp.rot90(x)), X),
    case("jnp.roll by a traced shift", lambda x, s: jnp.roll(x, s, axis=1), X, np.array(-4, I32)),
    *(case(f"jnp.pad {mode}", lambda x, mode=mode: jnp.pad(x, ((1, 2), (3, 0)), mode=mode), X)
      for mode in ("constant", "edge", "reflect", "symmetric", "wrap", "maximum", "mean", "linear_ramp")),
    case("jnp.tril triu", lambda x: (jnp.tril(x), jnp.triu(x, 1)), X),
    case("jnp.diag diagonal trace", lambda x, v: (jnp.diag(v), jnp.diagonal(x), jnp.trace(x, 1)), X, V[:4]),
    case("jnp.eye and identity plus x", lambda x: x + jnp.eye(4, 6, k=1), X),
    case("jnp.outer kron", lambda a, b: (jnp.outer(a, b), jnp.kron(a[:3], b[:2])), V[:4], V[4:]),
    case("jnp.meshgrid", lambda a, b: jnp.meshgrid(a, b), V[:3], V[3:7]),
    case("broadcast_to expand_dims squeeze", lambda x: (jnp.broadcast_to(x, (3, 4, 6)),
                                                        jnp.expand_dims(x, 1).squeeze(1)), X),
    case("moveaxis swapaxes ravel", lambda x: (jnp.moveaxis(x, 0, -1), jnp.swapaxes(x, 1, 2), x.ravel()), B),
    case("jnp.atleast_2d and column_stack", lambda v: (jnp.atleast_2d(v), jnp.column_stack([v, v])), V),
    case("empty arrays", lambda x: (x.T, jnp.concatenate([x, x]), x.sum(1), x.reshape(5, 0)), EMPTY),
    # indexing and updates
    case("take and fancy indexing", lambda x, i: (jnp.take(x, i, axis=1), x[i % 4], x[:, ::-2], x[1:3, -2:]), X, IDX),
    case("take out of bounds (fill)", lambda x, i: jnp.take(x, i * 3, axis=1, mode="fill", fill_value=-7.0), X, IDX),
    case("take clip", lambda x, i: jnp.take(x, i * 3 - 2, mode="clip"), V, IDX),
    case("take_along_axis argsort", lambda x: jnp.take_along_axis(x, jnp.argsort(x, 1), 1), X),
    case("boolean mask where", lambda x: jnp.where(x > 0, x, 0).sum(), X),
    case(".at set add mul min max", lambda x, i, v: (x.at[i].set(v), x.at[i].add(v), x.at[i].multiply(v),
                                                    x.at[i].min(v), x.at[i].max(v)), V, IDX, V[:5]),
    case(".at get out of bounds fill", lambda x, i: x.at[i * 3].get(mode="fill", fill_value=0.0), V, IDX),
    case("dynamic_slice and update", lambda x, s: (jax.lax.dynamic_slice(x, (s, s), (2, 3)),
                                                   jax.lax.dynamic_update_slice(x, jnp.ones((2, 2)), (s, 5))),
         X, np.array(3, I32)),
    case("jnp.put_along_axis", lambda x, i: jnp.put_along_axis(x, i, -1.0, axis=1, inplace=False), X,
         ints(0, 6, 4, 2, seed=22)),
    case("segment_sum", lambda x, s: jax.ops.segment_sum(x, s, num_segments=4), V, ints(0, 4, 9, seed=23)),
    case("segment_max", lambda x, s: jax.ops.segment_max(x, s, num_segments=4), V, ints(0, 4, 9, seed=24)),
    # products
    case("matmul", jnp.matmul, X, Y),
    case("batched matmul", lambda a, b: a @ b, B, arrays(2, 6, 5, seed=25)),
    case("matmul with an empty contraction", lambda a, b: a @ b, np.zeros((3, 0), F32), np.zeros((0, 4), F32)),
    case("jnp.dot vdot inner", lambda a, b: (jnp.dot(a, b), jnp.vdot(a, b), jnp.inner(a, b)), V, V[::-1].copy()),
    case("jnp.tensordot", lambda a, b: jnp.tensordot(a, b, axes=([1, 2], [0, 1])), B, arrays(4, 6, 2, seed=26)),
    case("jnp.einsum attention-like", lambda q, k: jnp.einsum("bqd,bkd->bqk", q, k), B, B),
    case("jnp.einsum trace and outer", lambda x, v: (jnp.einsum("ii", x[:, :4]), jnp.einsum("i,j->ij", v, v)), X, V),
    case("jnp.cross", jnp.cross, arrays(5, 3, seed=27), arrays(5, 3, seed=28)),
    case("jnp.convolve", lambda a, b: (jnp.convolve(a, b), jnp.convolve(a, b, mode="same")), V, V[:4]),
    case("jnp.correlate", lambda a, b: jnp.correlate(a, b, mode="valid"), V, V[:3]),
    case("jnp.polyval", lambda p, x: jnp.polyval(p, x), V[:4], V),
    case("transposed matrix times vector", lambda x, v: (x.T @ v, jnp.einsum("ijk,j->ik", B, v[:4])), X, V[:4]),
    case("int matmul", lambda a, b: a @ b, I, ints(-5, 5, 6, 3, seed=29)),
    case("jnp.cov and corrcoef", lambda x: (jnp.cov(x), jnp.corrcoef(x)), X, tolerance=1e-3),
    # more of jax.numpy, jax.scipy.signal and jax.scipy.ndimage
    case("jnp.nanargmax and nanargmin", lambda x: (jnp.nanargmax(x, 1), jnp.nanargmin(x, 0)), NANS),
    case("jnp.nanmedian and nanquantile", lambda x: (jnp.nanmedian(x, 1), jnp.nanquantile(x, 0.7, axis=0)), NANS),
    case("jnp.isin", lambda x, t: jnp.isin(x, t), I, np.array([0, 3, -5, 19], I32)),
    case("jnp.setdiff1d and union1d with size", lambda a, b: (jnp.setdiff1d(a, b, size=6, fill_value=-1),
                                                             jnp.union1d(a, b, size=12, fill_value=-1)),
         ints(0, 9, 8, seed=30), ints(0, 9, 5, seed=31)),
    case("jnp.intersect1d with size", lambda a, b: jnp.intersect1d(a, b, size=4, fill_value=-1),
         ints(0, 9, 8, seed=32), ints(0, 9, 5, seed=33)),
    case("jnp.argpartition", lambda x: jnp.sort(jnp.take(x, jnp.argpartition(x, 3)[:3])), V),
    case("jnp.extract and compress with size", lambda x: (jnp.extract(x > 0, x, size=5), jnp.compress(
        x > 0, x, size=5)), V),
    case("jnp.choose", lambda i, a, b: jnp.choose(i, [a, b], mode="clip"), ints(0, 2, 6, seed=34), V[:6], V[3:]),
    case("jnp.packbits and unpackbits", lambda p, u: (jnp.packbits(p), jnp.unpackbits(u)), X > 0,
         ints(0, 256, 3, seed=35, dtype=np.uint8)),
    case("jnp.tril_indices gather", lambda x: x[:, :4][jnp.tril_indices(4)], X),
    case("jnp.fill_diagonal", lambda x: jnp.fill_diagonal(x, -1.0, inplace=False), X),
    case("jnp.apply_along_axis", lambda x: jnp.apply_along_axis(lambda r: r.max() - r.min(), 1, x), X),
    case("jnp.vectorize", jnp.vectorize(lambda a, b: jnp.where(a > b, a - b, b * a)), X, X[::-1].copy()),
    case("jnp.vander and polyder", lambda x, p: (jnp.vander(x, 4), jnp.polyder(p), jnp.polyint(p)), V[:5], V[:4]),
    case("jnp.unwrap", lambda x: jnp.unwrap(x), np.cumsum(np.abs(V) * 2).astype(F32)),
    case("jnp.linspace logspace geomspace", lambda a: (jnp.linspace(a, a + 1, 5), jnp.logspace(0, a, 4),
                                                      jnp.geomspace(1, jnp.abs(a) + 2, 3)), np.array(1.5, F32)),
    case("jnp.histogram2d", lambda x, y: jnp.histogram2d(x, y, bins=3, range=[[-2, 2], [-2, 2]])[0], V, V[::-1].copy()),
    case("jnp.ravel_multi_index and unravel_index", lambda i, j: (jnp.ravel_multi_index((i, j), (4, 6), mode="clip"),
                                                                  jnp.unravel_index(i * 5 + j, (4, 6))), IDX, IDX[::-1].copy()),
    case("jnp.cumulative_sum include_initial", lambda x: jnp.cumulative_sum(x, axis=1, include_initial=True), X),
    case("jnp.block and hstack vstack", lambda a: (jnp.block([[a, a], [a, a]]), jnp.hstack([a, a]), jnp.vstack([a, a])),
         X[:2, :2]),
    case("jnp.searchsorted of sorted rows (vmap)", jax.vmap(lambda a, v: jnp.searchsorted(a, v)), np.sort(X, 1),
         X[:, :2]),
    case("jax.scipy.signal.convolve and correlate", lambda a, b: (signal.convolve(a, b), signal.correlate(
        a, b, mode="same")), V, V[:3]),
    case("jax.scipy.signal.convolve2d", lambda a, b: signal.convolve2d(a, b, mode="same"), X, arrays(3, 3, seed=36)),
    case("jax.scipy.ndimage.map_coordinates", lambda x, c: ndimage.map_coordinates(x, [c, c * 1.5], order=1,
                                                                               mode="nearest"),
         X, np.array([0.0, 0.5, 1.7, 2.9, -1.0, 3.5], F32)),
]
