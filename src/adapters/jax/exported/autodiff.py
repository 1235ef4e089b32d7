"""Differentiating calls of exported functions, from their exported VJPs.

``jaxport_call``'s JVP rule returns the primal call and, for the tangents,
``jaxport_call_jvp``: a primitive linear in the tangents. Reverse mode never
evaluates it forward; it *transposes* it, which is a call of the exported
VJP (order 1 suffices for ``jax.grad``). Forward mode evaluates it: the VJP
``g(x, ct) = J(x)^T ct`` is linear in ``ct``, so the VJP of ``g`` with respect
to ``ct``, applied to a tangent ``t``, is ``J(x) t`` -- the JVP. That needs the
exported VJPs up to order 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

from jaxport.domain.errors import VjpUnavailableError
from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.exported.call import CallTarget, abstract_eval, bind, jaxport_call_p, sequential_batcher

jvp_p = jax_internals.Primitive("jaxport_call_jvp")
jvp_p.multiple_results = True


def vjp_target(target: CallTarget, *, purpose: str, order: int = 1, of: str | None = None) -> CallTarget:
    """The call target of ``target``'s exported VJP.

    Args:
        target: the function whose VJP is needed.
        purpose: what needs it, for the message.
        order: which VJP order of the user's function ``target``'s VJP is.
        of: the user's function's name, when ``target`` is itself a VJP.

    Raises:
        VjpUnavailableError: there is none; the message says how to get one.
    """
    vjp = target.vjp()
    if vjp is None:
        raise VjpUnavailableError(
            f"{purpose} of the exported function '{of or target.fun_name}' needs its exported "
            f"VJPs up to order {order}, which this object does not carry. Differentiate the "
            "in-process export, or serialize it with a higher vjp_order (exp.serialize(vjp_order=1) "
            "for reverse mode, vjp_order=2 for second order and for forward mode).")
    return vjp


def _tangent_avals(target: CallTarget, primal_avals: Sequence[Any]) -> list[Any]:
    return [a.to_tangent_aval() for a in abstract_eval(target, tuple(primal_avals))]


def _call_jvp(primals: Sequence[Any], tangents: Sequence[Any], *, target: CallTarget) -> tuple[Any, Any]:
    outs = bind(target, primals)
    if all(type(t) is ad.Zero for t in tangents):
        avals = _tangent_avals(target, [jax.typeof(p) for p in primals])
        return outs, [ad.Zero(a) for a in avals]
    tangents = [ad.instantiate_zeros(t) for t in tangents]
    return outs, jvp_p.bind(*primals, *tangents, target=target)


ad.primitive_jvps[jaxport_call_p] = _call_jvp


def _jvp_abstract_eval(*avals: Any, target: CallTarget) -> list[Any]:
    return _tangent_avals(target, avals[:len(target.objects.in_avals)])


def _zeros(aval: Any) -> Any:
    return jnp.zeros(aval.shape, aval.dtype)


_FORWARD = "Forward-mode differentiation (jax.jvp, jax.jacfwd, jax.hessian)"


def _jvp_forward(*args: Any, target: CallTarget) -> list[Any]:
    """The JVP ``J(x) t`` of a call, evaluated with exported VJPs."""
    nr_in = len(target.objects.in_avals)
    primals, tangents = args[:nr_in], args[nr_in:]
    if target.vjp_of_arity is not None:
        return _jvp_of_a_vjp(target, target.vjp_of_arity, primals, tangents)
    first = vjp_target(target, purpose=_FORWARD)
    second = vjp_target(first, purpose=_FORWARD, order=2, of=target.fun_name)
    out_avals = _tangent_avals(target, [jax.typeof(p) for p in primals])
    results = bind(second, [*primals, *(_zeros(a) for a in out_avals), *tangents])
    return results[nr_in:nr_in + len(out_avals)]


def _jvp_of_a_vjp(target: CallTarget, arity: int, primals: Sequence[Any],
                  tangents: Sequence[Any]) -> list[Any]:
    """The JVP of ``T(x, c) = J(x)^T c`` with one more VJP order, not two.

    ``dT = T(x, dc) + d/dx(J(x)^T c) dx``; the second term is the ``x`` part of
    the VJP of ``T`` at ``(x, c)`` applied to ``dx``, because each output's
    Hessian is symmetric.
    """
    x, c = primals[:arity], primals[arity:]
    dx, dc = tangents[:arity], tangents[arity:]
    linear_part = bind(target, [*x, *dc])
    curvature = bind(vjp_target(target, purpose=_FORWARD, order=2), [*x, *c, *dx])[:arity]
    return [_add(a, b) for a, b in zip(linear_part, curvature)]


def _add(a: Any, b: Any) -> Any:
    return a if a.dtype == jax.dtypes.float0 else a + b


def _jvp_transpose(cts: Sequence[Any], *args: Any, target: CallTarget) -> list[Any]:
    nr_in = len(target.objects.in_avals)
    primals, tangents = args[:nr_in], args[nr_in:]
    if any(ad.is_undefined_primal(p) for p in primals):
        raise NotImplementedError("jaxport_call_jvp is linear in its tangents only")
    first = vjp_target(target, purpose="Reverse-mode differentiation (jax.grad, jax.vjp)")
    out_avals = _tangent_avals(target, [jax.typeof(p) for p in primals])
    cts = [_zeros(a) if type(ct) is ad.Zero else ct for ct, a in zip(cts, out_avals)]
    in_cts = bind(first, [*primals, *cts])
    return [None] * nr_in + [ct if ad.is_undefined_primal(t) else None
                             for ct, t in zip(in_cts, tangents)]


jvp_p.def_abstract_eval(_jvp_abstract_eval)
jvp_p.def_impl(lambda *args, target: jax.jit(lambda *a: _jvp_forward(*a, target=target))(*args))
mlir.register_lowering(jvp_p, mlir.lower_fun(_jvp_forward, multiple_results=True))
ad.primitive_transposes[jvp_p] = _jvp_transpose
batching.primitive_batchers[jvp_p] = sequential_batcher(jvp_p)
