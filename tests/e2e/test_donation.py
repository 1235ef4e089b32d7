"""Donation: ``call`` keeps its inputs alive, as ``jax.export``'s does; ``donating_call()`` donates what
the module donates (its ``tf.aliasing_output`` arguments), eagerly; inside a ``jax.jit`` that jit decides."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.errors import DonationError


def step(unused: jax.Array, x: jax.Array, cache: dict[str, jax.Array], scale: jax.Array
         ) -> tuple[jax.Array, dict[str, jax.Array]]:
    """A decode-like step: ``unused`` is dropped from the module, ``cache`` is updated and donated."""
    return x.sum() * scale, {"k": cache["k"] + x, "v": cache["v"] * scale}


def specs(rows: Any = 4) -> tuple[Any, ...]:
    f32 = jnp.float32
    cache = {"k": jax.ShapeDtypeStruct((rows, 8), f32), "v": jax.ShapeDtypeStruct((rows, 8), f32)}
    return jax.ShapeDtypeStruct((), f32), jax.ShapeDtypeStruct((rows, 8), f32), cache, jax.ShapeDtypeStruct((), f32)


def in_process() -> jaxport.Exported:
    return jaxport.export(jax.jit(step, donate_argnums=2))(*specs())


EXPORTS: dict[str, Callable[[], jaxport.Exported]] = {
    "in-process": in_process,
    "jaxport's bytes": lambda: jaxport.deserialize(in_process().serialize(vjp_order=1)),
    "jax.export's bytes": lambda: jaxport.deserialize(
        jax.export.export(jax.jit(step, donate_argnums=2))(*specs()).serialize(vjp_order=1)),
    # main takes the platform index first, its shapes are symbolic
    "polymorphic, two platforms": lambda: jaxport.deserialize(jaxport.export(
        jax.jit(step, donate_argnums=2), platforms=("cpu", "tpu"))(*specs(jaxport.symbolic_shape("b")[0])).serialize(vjp_order=1)),
}


@pytest.fixture(scope="module", params=list(EXPORTS))
def exported(request: pytest.FixtureRequest) -> jaxport.Exported:
    return EXPORTS[request.param]()


def arguments() -> tuple[jax.Array, jax.Array, dict[str, jax.Array], jax.Array]:
    x = jnp.arange(32, dtype=jnp.float32).reshape(4, 8)
    return jnp.float32(0), x, {"k": jnp.ones((4, 8)), "v": jnp.full((4, 8), 2.0)}, jnp.float32(3)


def alive(tree: Any) -> list[bool]:
    return [not leaf.is_deleted() for leaf in jax.tree.leaves(tree)]


def test_a_donating_call_deletes_the_donated_inputs_and_a_plain_call_keeps_every_input(
        exported: jaxport.Exported) -> None:
    plain_args, donated_args = arguments(), arguments()
    plain = exported.call(*plain_args)
    assert alive(plain_args) == [True] * 5
    donated = exported.donating_call()(*donated_args)
    unused, x, cache, scale = donated_args
    assert alive(cache) == [False, False] and alive((unused, x, scale)) == [True] * 3
    expected = step(*arguments())
    for results in (plain, donated):
        assert str(jax.tree.structure(results)) == str(jax.tree.structure(expected))
        for got, want in zip(jax.tree.leaves(results), jax.tree.leaves(expected)):
            np.testing.assert_array_equal(got, want)


def test_a_donating_call_takes_numpy_arrays_and_leaves_them_alive(exported: jaxport.Exported) -> None:
    args = jax.tree.map(np.asarray, arguments())
    y, cache = exported.donating_call()(*args)
    assert float(y) == float(step(*arguments())[0])
    np.testing.assert_array_equal(args[2]["k"], np.ones((4, 8), np.float32))


def test_inside_a_jit_that_jits_donate_argnums_governs(exported: jaxport.Exported) -> None:
    args = arguments()
    jax.jit(exported.donating_call())(*args)
    assert alive(args) == [True] * 5
    jax.jit(exported.donating_call(), donate_argnums=2)(*args)
    assert alive(args[2]) == [False, False] and alive(args[1]) == [True]
    again = arguments()
    jax.jit(exported.call, donate_argnums=2)(*again)  # as with jax.export's call
    assert alive(again[2]) == [False, False]


def test_under_grad_and_vmap_a_donating_call_is_the_plain_call(exported: jaxport.Exported) -> None:
    unused, x, cache, scale = arguments()
    donating = exported.donating_call()

    def loss(call: Callable[..., Any], cache: dict[str, jax.Array]) -> Any:
        y, new = call(unused, x, cache, scale)
        return y + new["k"].sum() + new["v"].sum()

    grads = jax.grad(lambda c: loss(donating, c))(cache)
    assert alive(cache) == [True, True]
    np.testing.assert_array_equal(grads["v"], jax.grad(lambda c: loss(exported.call, c))(cache)["v"])
    batched = jax.vmap(donating, in_axes=(None, None, 0, None))(unused, x, jax.tree.map(lambda a: a[None], cache), scale)
    assert alive(cache) == [True, True] and batched[1]["k"].shape == (1, 4, 8)


@pytest.mark.parametrize("make", [lambda: jaxport.export(jax.jit(step))(*specs()),
                                  lambda: jaxport.deserialize(jax.export.export(jax.jit(step))(*specs()).serialize())],
                         ids=["in-process", "jax.export's bytes"])
def test_asking_a_module_that_donates_nothing_for_its_donating_call_is_a_donation_error(
        make: Callable[[], jaxport.Exported]) -> None:
    exported = make()
    with pytest.raises(DonationError, match=r"'step' donates none of its inputs.*donate_argnums"):
        exported.donating_call()
    args = arguments()
    exported.call(*args)  # the plain call is unaffected
    assert alive(args) == [True] * 5


# x 1024 float32 = 16 MiB. Measured here (VmHWM, medians of three alternating rounds, a loaded machine):
# the loop that donates peaked at 241 MiB (1.9 s), the one that copies at 441 MiB (4.7 s), copies queued.
CACHE_ROWS = 4 * 1024
PEAK_CHILD = """
import sys
import jax.numpy as jnp, numpy as np
import jaxport
exported = jaxport.deserialize(open(sys.argv[1], "rb").read())
call = exported.donating_call() if sys.argv[2] == "donated" else exported.call
cache = jnp.zeros(({rows}, 1024), jnp.float32)
for i in range(256):
    cache = call(cache, np.int32(i))
assert float(cache[:256].sum()) == 256 * 1024, "each step wrote its row"
print(next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


# VmHWM is this process's own peak; getrusage's ru_maxrss would not do: Linux keeps the largest of the
# parent's size at the fork and the child's across the exec, so every child of a large pytest reads the same.
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
def test_a_256_step_loop_that_donates_peaks_at_least_0_8_of_one_cache_below_the_same_loop_without(
        tmp_path: Path) -> None:
    def write_row(cache: jax.Array, i: jax.Array) -> Any:
        return cache.at[i].set(1.0)

    artifact = tmp_path / "step.jax"
    artifact.write_bytes(jaxport.export(jax.jit(write_row, donate_argnums=0))(
        jax.ShapeDtypeStruct((CACHE_ROWS, 1024), jnp.float32), jax.ShapeDtypeStruct((), jnp.int32)).serialize())
    peaks = {}
    for way in ("donated", "copied"):  # each loop in a fresh process of its own, which measures its own peak
        done = subprocess.run([sys.executable, "-c", PEAK_CHILD.format(rows=CACHE_ROWS), str(artifact), way],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        peaks[way] = int(done.stdout.split()[-1])
    assert peaks["copied"] - peaks["donated"] >= 0.8 * CACHE_ROWS * 1024 * 4, peaks
