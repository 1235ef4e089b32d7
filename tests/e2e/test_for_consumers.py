"""End to end: artifacts written for an older consumer (``consumer=``, ``export --consumer``).

What is written for a consumer is what ``jaxport check --consumer`` accepts; a
consumer that would not read it (or that the table lacks, or that is written
wrongly) is a typed error before anything is written. Reading, calling and
differentiating in JAX 0.8.3 and 0.9.2 themselves: ``tests/compat``.
"""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.application.cli.main import main
from jaxport.domain.artifact import consumers
from jaxport.domain.artifact.module_format import stablehlo_version
from jaxport.domain.artifact.producer import release_key
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.errors import ConsumerMismatchError, UsageError
from tests.helpers.consumer_exports import NEWEST_JAX, fused_multiply_add, special_functions

SPEC = jax.ShapeDtypeStruct((3,), jnp.float32)
MODEL = '''
import jax.numpy as jnp

def predict(x):
    return jnp.tanh(x)
'''


def f(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
    return jnp.tanh(x * params["w"])


@pytest.fixture(scope="module")
def exp() -> jaxport.Exported:
    return jaxport.export(jax.jit(f))({"w": SPEC}, SPEC)


def modules(blob: bytes) -> list[str | None]:
    record: ArtifactRecord | None = jaxport.deserialize(blob).record
    found = []
    while record is not None:
        found.append(stablehlo_version(record.mlir_module_serialized[:300]))
        record = record.vjp
    return found


@pytest.mark.parametrize("spec, version", [("jax==0.8.3", "1.13.5"), ("jax==0.9.2", "1.14.0"),
                                           ("tf==2.21", "1.15.0")])
def test_save_writes_what_the_consumer_reads_and_check_consumer_agrees(
        exp: jaxport.Exported, tmp_path: Path, spec: str, version: str) -> None:
    path = tmp_path / "f.jaxport"
    # As JAX here writes it (1.22.0 on JAX 0.12.1, 1.15.0 on 0.10.2): read where the consumer reads the target.
    native = bytes(exp.serialize(vjp_order=1))
    reads = consumers.find_consumer(spec).reads_stablehlo
    assert reads is not None
    assert jaxport.check_consumer(native, spec).ok == (release_key(str(modules(native)[0])) <= release_key(reads))
    jaxport.save(exp, path, vjp_order=1, consumer=spec)
    assert modules(path.read_bytes()) == [version, version]
    assert jaxport.check_consumer(path, spec).ok
    assert main(["check", str(path), "--consumer", spec]) == 0
    loaded = jaxport.load(path)  # and jaxport itself still reads, calls and differentiates it
    w, x = {"w": jnp.full(3, 0.5)}, jnp.arange(3.0)
    np.testing.assert_allclose(loaded.call(w, x), f(w, x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda p: loaded.call(p, x).sum())(w)["w"],
                               jax.grad(lambda p: f(p, x).sum())(w)["w"], rtol=1e-6)


def test_serialize_for_a_consumer_sealed_or_not_and_without_one_the_bytes_are_unchanged(
        exp: jaxport.Exported) -> None:
    for integrity in (True, False):
        blob = exp.serialize(vjp_order=1, integrity=integrity, consumer="jax==0.9.2")
        assert jaxport.check_consumer(bytes(blob), "jax==0.9.2").ok
        assert exp.serialize(vjp_order=1, integrity=integrity, consumer=None) == \
            exp.serialize(vjp_order=1, integrity=integrity)
    # The JAX here as the consumer: the bytes it writes.
    assert exp.serialize(consumer=f"jax=={jax.__version__}") == exp.serialize()


def test_save_bundle_writes_every_function_for_the_consumer(exp: jaxport.Exported, tmp_path: Path) -> None:
    path = tmp_path / "bundle"
    jaxport.save_bundle(path, {"predict": exp}, {"w": np.ones(3, np.float32)}, vjp_order=1,
                        consumer="jax==0.8.3")
    assert jaxport.check_consumer(path, "jax==0.8.3").ok
    assert main(["check", str(path), "--consumer", "jax==0.8.3"]) == 0
    bundle = jaxport.load_bundle(path)
    np.testing.assert_allclose(bundle["predict"](jnp.arange(3.0)), np.tanh(np.arange(3.0)), rtol=1e-6)


def test_the_export_command_writes_for_the_consumer_and_refuses_bad_ones_before_writing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "consumer_e2e_model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    head = ["export", "consumer_e2e_model:predict", "--arg", "f32[3]", "--vjp-order", "1"]
    assert main([*head, "--consumer", "jax==0.9.2", "-o", "ok.jaxport"]) == 0
    assert main(["check", "ok.jaxport", "--consumer", "jax==0.9.2"]) == 0
    capsys.readouterr()
    for spec, code, words in [("jax0.9.2", 2, "RUNTIME==VERSION"), ("jax==0.6.0", 2, "knows no jax 0.6.0"),
                              ("tf==2.18", 2, "calling convention 10 is outside TensorFlow 2.18.0's window")]:
        assert main([*head, "--consumer", spec, "-o", "bad.jaxport"]) == code, spec
        assert words in capsys.readouterr().err, spec
        assert not (tmp_path / "bad.jaxport").exists()


@pytest.mark.parametrize("spec, error, words", [
    ("jax=0.9.2", UsageError, "RUNTIME==VERSION"),
    ("pytorch==2.0", UsageError, "RUNTIME==VERSION"),
    ("jax==0.6.0", UsageError, "knows no jax 0.6.0"),
    ("tf==2.19", ConsumerMismatchError, "the module targets StableHLO [0-9.]+, and the StableHLO versions it "
                                        "reads are not known"),
    ("jax==0.8.1", ConsumerMismatchError, "generation 5 for its device count"),
])
def test_bad_consumers_are_typed_errors_and_nothing_is_written(
        exp: jaxport.Exported, tmp_path: Path, spec: str, error: type[Exception], words: str) -> None:
    path, bundle = tmp_path / "f.jaxport", tmp_path / "bundle"
    with pytest.raises(error, match=words):
        jaxport.save(exp, path, consumer=spec)
    with pytest.raises(error, match=words):
        jaxport.save_bundle(bundle, {"predict": exp}, {"w": np.ones(3, np.float32)}, consumer=spec)
    assert not path.exists() and not bundle.exists()


def test_an_operation_the_consumers_stablehlo_lacks_is_named_and_nothing_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No row of the table is older than the operations JAX 0.12 writes on CPU; a row for a
    # consumer of StableHLO 1.0.0 meets exp's result accuracy (vhlo.exponential_v2, StableHLO 1.9).
    old = dataclasses.replace(consumers.find_consumer("jax==0.12.0.1"), version="0.0.1", stablehlo="1.0.0")
    monkeypatch.setattr(consumers, "CONSUMERS", (*consumers.CONSUMERS, old))
    accurate = jaxport.export(jax.jit(lambda x: jax.lax.exp(x, accuracy=jax.lax.Tolerance(
        atol=1e-3, rtol=1e-3, ulps=2))))(SPEC)
    path = tmp_path / "f.jaxport"
    with pytest.raises(ConsumerMismatchError, match=r"stablehlo.exponential as the module uses it \(vhlo.exponential_v2, its attributes "
                                                     r"included\) does not exist in StableHLO 1.0.0 \(the StableHLO that JAX 0.0.1 reads; the module targets "
                                                     r"[0-9.]+\)") as caught:
        jaxport.save(accurate, path, consumer="jax==0.0.1")
    assert caught.value.consumer == "JAX 0.0.1"
    assert not path.exists()
    jaxport.save(jaxport.export(jax.jit(jnp.exp))(SPEC), path, consumer="jax==0.0.1")  # the default accuracy is
    assert modules(path.read_bytes()) == ["1.0.0"]  # written for 1.0.0


def test_tensorflow_2_21s_xla_call_module_runs_what_was_written_for_it(exp: jaxport.Exported) -> None:
    pytest.importorskip("tensorflow")
    from jaxport.adapters.savedmodel.tensorflow_import import tf, xla

    if not tf().__version__.startswith("2.21."):
        pytest.skip(f"TensorFlow {tf().__version__}, not 2.21")
    record = jaxport.deserialize(exp.serialize(consumer="tf==2.21")).record
    assert stablehlo_version(record.mlir_module_serialized[:300]) == "1.15.0"
    w, x = np.full(3, 0.5, np.float32), np.arange(3.0, dtype=np.float32)
    flat = [w, x]

    def body() -> Any:
        return xla().call_module([flat[i] for i in record.module_kept_var_idx],
                                 version=record.calling_convention_version,
                                 module=record.mlir_module_serialized, Tout=[tf().float32], Sout=[[3]],
                                 platforms=["CPU"], disabled_checks=[], has_token_input_output=False,
                                 use_shardy_partitioner=True)

    run = tf().function(body, jit_compile=True)
    np.testing.assert_allclose(np.asarray(run()[0]), np.tanh(x * w), rtol=1e-6)


@pytest.fixture(scope="module")
def special() -> jaxport.Exported:
    """lgamma and digamma as the custom calls that JAX 0.12.1 lowers them to past its forward-compatibility gate."""
    if not NEWEST_JAX:
        pytest.skip(f"JAX {jax.__version__} lowers lgamma to no custom call")
    return special_functions()


@pytest.mark.parametrize("spec", ["jax==0.12.0.1", "jax==0.12.0", "jax==0.11.1", "jax==0.10.2"])
def test_a_custom_call_the_consumer_does_not_know_is_refused_at_save_and_check_says_no(
        special: jaxport.Exported, tmp_path: Path, spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "special.jaxport"
    consumer = consumers.find_consumer(spec)
    with pytest.raises(ConsumerMismatchError, match=rf"function 'special'.*cpu_lgamma_ffi, which JAX 0\.12\.1 "
                                                    rf"first allows and {consumer}'s jaxlib"):
        jaxport.save(special, path, consumer=spec)
    assert not path.exists()
    jaxport.save(special, path)  # for the JAX here, which runs it
    assert jaxport.check_consumer(path, "jax==0.12.1").ok
    found = jaxport.check_consumer(path, spec)
    assert not found.ok and any("cpu_digamma_ffi" in r for r in found.reasons)
    capsys.readouterr()
    assert main(["check", str(path), "--consumer", spec]) != 0
    assert "cpu_lgamma_ffi" in capsys.readouterr().out


def test_weak_types_are_written_strong_for_older_readers_and_check_and_inspect_list_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    weak = jaxport.export(jax.jit(lambda x, s: (x * s, s)))(SPEC, 2.0)  # a Python float: a weak f32[]
    assert [a.weak_type for a in weak.record.in_avals + weak.record.out_avals] == [False, True, False, True]
    path, old = tmp_path / "weak.jaxport", tmp_path / "old.jaxport"
    jaxport.save(weak, path)
    jaxport.save(weak, old, consumer="jax==0.12.0.1")
    assert [a.weak_type for a in jaxport.load(path).in_avals] == [False, NEWEST_JAX]
    assert [a.weak_type for a in jaxport.load(old).in_avals] == [False, False]
    loaded = jaxport.load(old)  # read strong, it still calls
    np.testing.assert_allclose(loaded.call(jnp.arange(3.0), 2.0)[0], jnp.arange(3.0) * 2)
    if NEWEST_JAX:
        notes = jaxport.check_consumer(path, "jax==0.12.0.1").notes
        assert any("arg1, output_1 lose their weak type" in n for n in notes), notes
        assert main(["inspect", str(path)]) == 0
        assert "weak types: arg1, output_1" in capsys.readouterr().out
    assert not any("weak" in n for n in jaxport.check_consumer(old, "jax==0.12.0.1").notes)


def test_stablehlo_fma_is_refused_for_a_consumer_whose_stablehlo_lacks_it_and_check_says_no(tmp_path: Path) -> None:
    if not NEWEST_JAX:
        pytest.skip(f"jaxlib {jax.__version__}'s StableHLO has no fma")
    fused, path = fused_multiply_add(), tmp_path / "fused.jaxport"
    x = jnp.arange(3.0)
    np.testing.assert_allclose(fused.call(x, x, x), x * x + x)
    with pytest.raises(ConsumerMismatchError, match=r"function 'fused' for JAX 0\.12\.0\.1: the operation stablehlo\.fma .* "
                                                    r"does not exist in StableHLO 1\.22\.0 \(the StableHLO that JAX 0\.12\.0\.1 "
                                                    r"reads; the module targets 1\.25\.\d+\)"):
        jaxport.save(fused, path, consumer="jax==0.12.0.1")
    assert not path.exists()
    jaxport.save(fused, path)
    assert jaxport.check_consumer(path, f"jax=={jax.__version__}").ok
    assert not jaxport.check_consumer(path, "jax==0.12.0.1").ok
