"""The user corpus's ``jax.nn``, ``jax.scipy.special`` and ``jax.scipy.stats`` functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.fft as sfft
import jax.scipy.integrate as integrate
import jax.scipy.special as sp
import jax.scipy.stats as st
import numpy as np

from .onnx_corpus import Case
from .onnx_user_corpus import EDGES, F32, FINITE, I32, UNIT, arrays, case, ints

X = arrays(4, 6, seed=51, scale=2.0)
LOGITS = np.array([[0.0, 1.0, -np.inf, 2.0], [-np.inf, -np.inf, 3.0, 1.0], [80.0, 90.0, -80.0, 0.0]], F32)
POS = np.array([0.05, 0.3, 1.0, 2.5, 7.0, 20.0], F32)
PROB = np.array([1e-6, 0.01, 0.2, 0.5, 0.8, 0.99, 0.999999], F32)
Q = arrays(2, 5, 8, seed=52)
K = arrays(2, 7, 8, seed=53)
VALS = arrays(2, 7, 8, seed=54)


def _activation(name: str, data: np.ndarray = EDGES, tolerance: float | None = None) -> Case:
    function = getattr(jax.nn, name)
    return case(f"jax.nn.{name}", lambda x: function(x), data, tolerance=tolerance)


def _special(name: str, *args: np.ndarray, tolerance: float | None = None) -> Case:
    function = getattr(sp, name)
    return case(f"jax.scipy.special.{name}", lambda *a: function(*a), *args, tolerance=tolerance)


CASES: list[Case] = [
    *(_activation(n) for n in ("relu", "relu6", "sigmoid", "softplus", "soft_sign", "silu", "swish", "gelu",
                               "elu", "selu", "celu", "leaky_relu", "hard_tanh", "hard_sigmoid", "hard_silu",
                               "log_sigmoid", "sparse_plus", "squareplus", "mish", "tanh", "sparse_sigmoid")),
    case("jax.nn.gelu exact", lambda x: jax.nn.gelu(x, approximate=False), EDGES),
    case("jax.nn.softmax", lambda x: jax.nn.softmax(x, axis=-1), LOGITS),
    case("jax.nn.log_softmax", lambda x: jax.nn.log_softmax(x, axis=-1), LOGITS),
    case("jax.nn.softmax with a where mask", lambda x, m: jax.nn.softmax(x, where=m, axis=-1), X,
         ints(0, 2, 4, 6, seed=55).astype(bool) | np.eye(4, 6, dtype=bool)),
    case("jax.nn.logsumexp", lambda x: jax.nn.logsumexp(x, axis=1), LOGITS),
    case("jax.nn.glu", lambda x: jax.nn.glu(x, axis=-1), X),
    case("jax.nn.one_hot", lambda i: jax.nn.one_hot(i, 5), np.array([0, 4, 2, -1, 7], I32)),
    case("jax.nn.standardize", lambda x: jax.nn.standardize(x, axis=-1), X),
    case("jax.nn.dot_product_attention", lambda q, k, v: jax.nn.dot_product_attention(q, k, v),
         Q[:, :, None], K[:, :, None], VALS[:, :, None]),
    case("jax.nn.dot_product_attention causal", lambda q, k, v: jax.nn.dot_product_attention(
        q, k[:, :5], v[:, :5], is_causal=True), Q[:, :, None], K[:, :, None], VALS[:, :, None]),
    case("an MLP layer", lambda x, w, b: jax.nn.relu(x @ w + b), X, arrays(6, 3, seed=56), arrays(3, seed=57)),
    case("layer norm by hand", lambda x: (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5),
         X),
    case("cross entropy", lambda logits, y: -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(y, 6), -1)),
         X, np.array([0, 5, 2, 3], I32)),
    # jax.scipy.special
    _special("erf", EDGES), _special("erfc", EDGES), _special("erfinv", np.array([-1, -0.5, 0, 0.9, 1], F32)),
    _special("expit", EDGES), _special("logit", UNIT), _special("ndtr", EDGES),
    _special("ndtri", PROB, tolerance=1e-3), _special("log_ndtr", FINITE, tolerance=1e-3),
    _special("gammaln", POS, tolerance=1e-3), _special("digamma", POS, tolerance=1e-3),
    _special("gamma", POS, tolerance=1e-3), _special("betaln", POS, POS[::-1].copy(), tolerance=1e-3),
    _special("xlogy", np.array([0.0, 0.0, 1.0, 2.0, 3.0], F32), np.array([0.0, 1.0, 0.5, 0.0, 2.0], F32)),
    _special("xlog1py", np.array([0.0, 1.0, 2.0, 3.0], F32), np.array([-1.0, 0.5, -0.5, 2.0], F32)),
    _special("entr", np.array([0.0, 0.2, 1.0, 2.0, -1.0], F32)),
    _special("kl_div", POS, POS[::-1].copy()), _special("rel_entr", POS, POS[::-1].copy()),
    _special("i0", FINITE, tolerance=1e-3), _special("i0e", FINITE), _special("i1", FINITE, tolerance=1e-3),
    _special("i1e", FINITE),
    _special("gammainc", POS, POS[::-1].copy(), tolerance=1e-3),
    _special("gammaincc", POS, POS[::-1].copy(), tolerance=1e-3),
    _special("betainc", POS / 10 + 0.5, POS / 10 + 1.0, PROB[:6], tolerance=1e-3),
    case("jax.scipy.special.multigammaln", lambda a: sp.multigammaln(a, 3), POS + 2, tolerance=1e-3),
    _special("logsumexp", LOGITS),
    case("jax.scipy.special.logsumexp with b", lambda x, b: sp.logsumexp(x, b=b, axis=1), X, np.abs(X)),
    _special("softmax", X), _special("log_softmax", X),
    _special("polygamma", np.array([1, 2, 1, 3], I32), np.array([0.5, 1.0, 3.0, 2.0], F32), tolerance=1e-3),
    _special("zeta", np.array([2.0, 3.0, 4.5], F32), np.array([1.0, 2.0, 0.5], F32), tolerance=1e-3),
    _special("spence", np.array([0.0, 0.5, 1.0, 2.0, 10.0], F32), tolerance=1e-3),
    _special("factorial", np.array([0.0, 1.0, 4.0, 10.0], F32), tolerance=1e-3),
    _special("exp1", POS, tolerance=1e-3), _special("expi", POS, tolerance=1e-3),
    case("erf times expit", lambda x: sp.erf(x) * sp.expit(x), FINITE),
    # jax.scipy.stats
    case("stats.norm", lambda x: (st.norm.pdf(x), st.norm.cdf(x), st.norm.logpdf(x, 1.0, 2.0)), EDGES),
    case("stats.norm.ppf", st.norm.ppf, PROB, tolerance=1e-3),
    case("stats.t.logpdf", lambda x: st.t.logpdf(x, 3.0), FINITE, tolerance=1e-3),
    case("stats.gamma.logpdf", lambda x: st.gamma.logpdf(x, 2.0), POS, tolerance=1e-3),
    case("stats.beta.logpdf", lambda x: st.beta.logpdf(x, 2.0, 3.0), PROB, tolerance=1e-3),
    case("stats.poisson.logpmf", lambda k: st.poisson.logpmf(k, 3.0), np.array([0, 1, 4, 10], I32),
         tolerance=1e-3),
    case("stats.bernoulli.logpmf", lambda k: st.bernoulli.logpmf(k, 0.3), np.array([0, 1, 1, 0], I32)),
    case("stats.expon and laplace", lambda x: (st.expon.pdf(x), st.laplace.cdf(x)), FINITE),
    case("stats.logistic and cauchy", lambda x: (st.logistic.cdf(x), st.cauchy.logpdf(x)), EDGES),
    case("stats.uniform.pdf", lambda x: st.uniform.pdf(x, 0.0, 2.0), FINITE),
    case("stats.multivariate_normal.logpdf", lambda x, m: st.multivariate_normal.logpdf(
        x, m, jnp.eye(3) * 2.0 + 0.5), arrays(5, 3, seed=58), arrays(3, seed=59), tolerance=1e-3),
    case("stats.binom.logpmf", lambda k: st.binom.logpmf(k, 10, 0.4), np.array([0, 3, 10, 5], F32),
         tolerance=1e-3),
    # more jax.scipy
    case("stats.norm.sf logcdf logsf", lambda x: (st.norm.sf(x), st.norm.logcdf(x), st.norm.logsf(x)), FINITE,
         tolerance=1e-3),
    case("stats.chi2.logpdf and cdf", lambda x: (st.chi2.logpdf(x, 3.0), st.chi2.cdf(x, 3.0)), POS, tolerance=1e-3),
    case("stats.gamma.cdf and beta.cdf", lambda x, p: (st.gamma.cdf(x, 2.5), st.beta.cdf(p, 2.0, 0.5)), POS,
         PROB[:6], tolerance=1e-3),
    case("stats.dirichlet.logpdf", lambda x: st.dirichlet.logpdf(x, jnp.array([1.5, 2.0, 0.7])),
         np.array([0.2, 0.5, 0.3], F32), tolerance=1e-3),
    case("stats.pareto and truncnorm", lambda x: (st.pareto.logpdf(x, 3.0), st.truncnorm.logpdf(x, -1.0, 2.0)),
         POS, tolerance=1e-3),
    case("stats.nbinom and geom logpmf", lambda k: (st.nbinom.logpmf(k, 5, 0.3), st.geom.logpmf(k + 1, 0.2)),
         np.array([0, 1, 4, 9], I32), tolerance=1e-3),
    case("stats.logistic.ppf and norm.isf", lambda p: (st.logistic.ppf(p), st.norm.isf(p)), PROB, tolerance=1e-3),
    case("stats.vonmises.logpdf", lambda x: st.vonmises.logpdf(x, 2.0), FINITE, tolerance=1e-3),
    case("stats.gennorm.logpdf", lambda x: st.gennorm.logpdf(x, 1.5), FINITE, tolerance=1e-3),
    case("special.logsumexp return_sign", lambda x, b: sp.logsumexp(x, b=b, axis=1, return_sign=True), X, -X),
    case("special.erfcx-like log_ndtr of large negatives", lambda x: sp.log_ndtr(x),
         np.array([-40.0, -20.0, -10.0, -5.0, 0.0, 5.0], F32), tolerance=1e-3),
    case("special.gammaln of large and tiny", sp.gammaln, np.array([1e-30, 1e-5, 1e5, 1e30], F32), tolerance=1e-3),
    case("special.betaln and beta", lambda a, b: (sp.betaln(a, b), sp.beta(a, b)), POS[:4], POS[2:], tolerance=1e-3),
    case("special.poch and hyp1f1", lambda a, x: (sp.poch(a, 2.5), sp.hyp1f1(1.0, a, x)), POS[:4] + 0.5,
         UNIT[1:5], tolerance=1e-3),
    case("jax.scipy.integrate.trapezoid", lambda y, x: integrate.trapezoid(y, x), np.sort(X[0]),
         np.arange(6, dtype=F32)),
    case("jax.scipy.fft.dct", lambda x: sfft.dct(x), X[0]),
    case("jax.nn.gelu on large magnitudes", jax.nn.gelu, np.array([-100.0, -10.0, -5.0, 5.0, 10.0, 100.0], F32)),
    case("jax.nn.softplus and log_sigmoid on large magnitudes", lambda x: (jax.nn.softplus(x), jax.nn.log_sigmoid(x)),
         np.array([-1e4, -100.0, -30.0, 30.0, 100.0, 1e4], F32)),
]
