"""End to end: models as bundles (save_bundle, load_bundle, Bundle)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from safetensors.numpy import load_file

import jaxport
from jaxport.errors import BundleError, BundleMismatchError, TreeMismatchError
from tests.helpers import bundle_model as model
from tests.helpers.bundle_model import Dense


def assert_trees_equal(got: Any, want: Any) -> None:
    assert str(jax.tree.structure(got)) == str(jax.tree.structure(want))
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        if jnp.issubdtype(w.dtype, jax.dtypes.prng_key):
            g, w = jax.random.key_data(g), jax.random.key_data(w)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return model.save(tmp_path_factory.mktemp("bundle") / "model", metadata={"epoch": 3, "name": "tiny"})


def test_a_bundle_is_a_manifest_one_artifact_per_function_and_the_weights(saved: Path) -> None:
    assert sorted(os.listdir(saved)) == ["init.jaxport", "loss.jaxport", "manifest.json",
                                         "params.safetensors", "predict.jaxport"]
    doc = json.loads((saved / "manifest.json").read_text())
    assert doc["format_version"] == 1 and doc["metadata"] == {"epoch": 3, "name": "tiny"}
    assert doc["functions"]["init"] == {"file": "init.jaxport", "takes_params": False}
    assert doc["functions"]["predict"] == {"file": "predict.jaxport", "takes_params": True}
    leaves = {leaf["key_path"]: leaf for leaf in doc["params"]["leaves"]}
    assert list(leaves) == ["dense/w", "dense/b", "layers/0/scale", "mask", "offset", "rng"]
    scale = np.asarray(model.make_params()["layers"][0]["scale"])
    assert leaves["layers/0/scale"] == {"key_path": "layers/0/scale", "dtype": "bfloat16", "shape": [3],
                                        "sha256": hashlib.sha256(scale.tobytes()).hexdigest()}
    assert leaves["rng"]["key_impl"] == "threefry2x32"
    assert set(doc["files"]) == {"init.jaxport", "loss.jaxport", "predict.jaxport", "params.safetensors"}
    weights_file = (saved / "params.safetensors").read_bytes()
    assert doc["files"]["params.safetensors"] == {"size": len(weights_file),
                                                  "sha256": hashlib.sha256(weights_file).hexdigest()}


def test_the_function_files_are_plain_artifacts_for_jaxport_and_jax_export(saved: Path) -> None:
    x, _ = model.inputs(2)
    params = model.make_params()
    for name in ("predict", "loss"):
        blob = (saved / f"{name}.jaxport").read_bytes()
        assert blob == model.exported()[name].serialize(1)
        assert jax.export.deserialize(bytearray(blob)).fun_name == name
    np.testing.assert_allclose(jaxport.load(saved / "predict.jaxport").call(params, x),
                               model.predict(params, x), rtol=1e-6)


def test_the_safetensors_library_reads_the_weights_by_key_path(saved: Path) -> None:
    tensors = load_file(saved / "params.safetensors")
    params = model.make_params()
    assert set(tensors) == {"dense/w", "dense/b", "layers/0/scale", "mask", "offset", "rng"}
    np.testing.assert_array_equal(tensors["dense/w"], np.asarray(params["dense"].w))
    assert tensors["layers/0/scale"].dtype.name == "bfloat16" and tensors["mask"].dtype == np.bool_
    np.testing.assert_array_equal(tensors["rng"], np.asarray(jax.random.key_data(params["rng"])))


def test_load_returns_the_weights_and_functions_with_the_weights_bound(saved: Path) -> None:
    bundle = jaxport.load_bundle(saved)
    assert isinstance(bundle, jaxport.Bundle) and sorted(bundle) == ["init", "loss", "predict"]
    assert_trees_equal(bundle.params, model.make_params())
    assert isinstance(bundle.params["dense"], Dense) and bundle.params["unused"] is None
    assert dict(bundle.metadata) == {"epoch": 3, "name": "tiny"}
    params = model.make_params()
    for batch in (3, 5):
        x, y = model.inputs(batch)
        want = model.predict(params, x)
        for got in (bundle["predict"](x), jax.jit(bundle["predict"])(x),
                    jax.vmap(bundle["predict"])(x[:, None])[:, 0]):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(bundle["loss"](x, y), model.loss(params, x, y), rtol=1e-6)
    np.testing.assert_array_equal(bundle["init"](jnp.float32(2)), jnp.full((3,), 2.0))


def test_a_bound_function_called_wrongly_speaks_of_the_callers_arguments_only(saved: Path) -> None:
    bundle = jaxport.load_bundle(saved)
    x, y = model.inputs(3)
    too_many = "args is a tuple of length 2 in the invocation and a tuple of length 1 when exported"
    for call in (bundle["predict"], jax.jit(bundle["predict"])):
        with pytest.raises(TreeMismatchError, match=too_many) as refused:
            call(x, y)
        assert "'predict' was exported (less the bundle's weights, which it binds" in str(refused.value)
    too_few = "args is a tuple of length 1 in the invocation and a tuple of length 2"
    with pytest.raises(TreeMismatchError, match=too_few):
        bundle["loss"](x)
    with pytest.raises(TreeMismatchError, match=r"args\[0\] is a <class 'dict'> in the invocation"):
        bundle["predict"]({"x": x})
    none = "args is a tuple of length 0 in the invocation and a tuple of length 1"
    with pytest.raises(TreeMismatchError, match=none):
        bundle["init"]()  # takes no weights: as Exported.call says


def test_bound_functions_trace_with_symbolic_shapes(saved: Path) -> None:
    bundle = jaxport.load_bundle(saved)
    b, = jaxport.symbolic_shape("b")
    again = jaxport.export(jax.jit(lambda x: bundle["predict"](x) * 2))(jax.ShapeDtypeStruct((b, 4), jnp.float32))
    assert str(again.out_avals[0].shape) == "(b, 3)"
    x, _ = model.inputs(4)
    np.testing.assert_allclose(again.call(x), 2 * model.predict(model.make_params(), x), rtol=1e-6, atol=1e-6)


def test_the_gradient_with_respect_to_the_weights_matches_the_originals(saved: Path) -> None:
    bundle = jaxport.load_bundle(saved)
    x, y = model.inputs(3)
    got = jax.grad(lambda p: bundle.functions["loss"].call(p, x, y), allow_int=True)(bundle.params)
    want = jax.grad(lambda p: model.loss(p, x, y), allow_int=True)(model.make_params())
    np.testing.assert_allclose(got["dense"].w, want["dense"].w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["layers"][0]["scale"].astype(jnp.float32),
                               want["layers"][0]["scale"].astype(jnp.float32), rtol=1e-2)


def test_with_params_swaps_the_weights_and_checks_them(saved: Path) -> None:
    bundle = jaxport.load_bundle(saved)
    other = model.make_params(seed=1)
    swapped = bundle.with_params(other)
    x, _ = model.inputs(2)
    np.testing.assert_allclose(swapped["predict"](x), model.predict(other, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(bundle["predict"](x), model.predict(model.make_params(), x), rtol=1e-6, atol=1e-6)
    bad = {**other, "offset": other["offset"].astype(jnp.int32)}
    with pytest.raises(BundleMismatchError, match="new weights .* at 'offset': dtype int32 where the weight is int8"):
        bundle.with_params(bad)
    with pytest.raises(BundleMismatchError, match="at 'layers': the pytree has 2 children"):
        bundle.with_params({**other, "layers": other["layers"] * 2})


def test_load_with_params_uses_those_weights(saved: Path) -> None:
    other = model.make_params(seed=2)
    bundle = jaxport.load_bundle(saved, params=other)
    assert_trees_equal(bundle.params, other)


def test_a_load_in_a_fresh_process_calls_the_model(saved: Path) -> None:
    script = ("import sys, json, numpy as np, jaxport\n"
              "import tests.helpers.bundle_model as m\n"
              "b = jaxport.load_bundle(sys.argv[1])\n"
              "x, y = m.inputs(3)\n"
              "print(json.dumps(np.asarray(b['predict'](x)).tolist()))\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script, str(saved)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    x, _ = model.inputs(3)
    got = np.asarray(json.loads(done.stdout.strip().splitlines()[-1]), np.float32)
    np.testing.assert_allclose(got, model.predict(model.make_params(), x), rtol=1e-6, atol=1e-6)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_weights_are_used_in_place_from_the_memory_mapped_file(saved: Path) -> None:
    bundle = jaxport.load_bundle(saved)
    maps = [line.split() for line in Path("/proc/self/maps").read_text().splitlines()]
    weights_file = str((saved / "params.safetensors").resolve())
    ranges = [tuple(int(a, 16) for a in m[0].split("-")) for m in maps if m[-1] == weights_file]
    pointer = bundle.params["dense"].w.unsafe_buffer_pointer()
    assert any(lo <= pointer < hi for lo, hi in ranges), "the weight was copied out of the mapping"
    assert bundle["predict"].params is bundle["loss"].params is bundle.params


def test_save_refuses_a_function_whose_weights_differ_and_writes_nothing(tmp_path: Path) -> None:
    params = model.make_params()
    bad = {**params, "offset": jnp.zeros(4, jnp.int8)}
    with pytest.raises(BundleMismatchError, match=r"function 'predict' .* at 'offset': shape \(3,\) where the weight has \(4,\)"):
        jaxport.save_bundle(tmp_path / "m", {"predict": model.exported()["predict"]}, bad)
    x_only = jaxport.export(jax.jit(lambda x: x))(jax.ShapeDtypeStruct((2,), jnp.float32))
    with pytest.raises(BundleMismatchError, match="function 'f' .* at '': the pytree has a leaf"):
        jaxport.save_bundle(tmp_path / "m", {"f": x_only}, params)
    with pytest.raises(BundleMismatchError, match="function 'init'"):
        jaxport.save_bundle(tmp_path / "m", model.exported(), params)
    with pytest.raises(BundleError, match="not in the bundle: \\['nope'\\]"):
        jaxport.save_bundle(tmp_path / "m", {}, params, without_params=["nope"])
    with pytest.raises(BundleError, match="metadata must be JSON-serializable"):
        jaxport.save_bundle(tmp_path / "m", {}, params, metadata={"f": object()})
    with pytest.raises(BundleError, match="'w' is a ShapeDtypeStruct, not an array"):
        jaxport.save_bundle(tmp_path / "m", {}, {"w": jax.ShapeDtypeStruct((2,), jnp.float32)})
    with pytest.raises(BundleError, match="'w' has dtype complex64"):
        jaxport.save_bundle(tmp_path / "m", {}, {"w": jnp.zeros(2, jnp.complex64)})
    assert os.listdir(tmp_path) == []


def test_a_new_save_replaces_the_previous_bundle_but_not_other_directories(tmp_path: Path) -> None:
    path = model.save(tmp_path / "m")
    model.save(path, seed=1)
    assert_trees_equal(jaxport.load_bundle(path).params, model.make_params(seed=1))
    assert os.listdir(tmp_path) == ["m"]
    (tmp_path / "other").mkdir()
    with pytest.raises(FileExistsError, match="not a bundle directory"):
        model.save(tmp_path / "other")


def test_an_interrupted_save_leaves_the_previous_bundle_and_no_temporary(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from jaxport.application.bundles import save as bundle_save

    path = model.save(tmp_path / "m")
    before = {name: (path / name).read_bytes() for name in os.listdir(path)}
    real = bundle_save.write_weights  # type: ignore[attr-defined]

    def write_half_then_fail(stream: Any, **kwargs: Any) -> None:
        real(stream, **kwargs)
        raise KeyboardInterrupt("interrupted while writing the weights")

    monkeypatch.setattr(bundle_save, "write_weights", write_half_then_fail)
    with pytest.raises(KeyboardInterrupt):
        model.save(path, seed=1)
    assert os.listdir(tmp_path) == ["m"]
    assert {name: (path / name).read_bytes() for name in os.listdir(path)} == before
    assert_trees_equal(jaxport.load_bundle(path).params, model.make_params())


def test_inspect_of_a_bundle_lists_functions_and_the_weights_table(saved: Path) -> None:
    info = jaxport.inspect(saved)
    assert isinstance(info, jaxport.BundleInfo)
    assert [(f.name, f.takes_params) for f in info.functions] == [("predict", True), ("loss", True), ("init", False)]
    assert info.functions[0].artifact.signature.startswith("({'dense': tests.bundle_model.Dense(float32[4,3], ")
    assert [(w.name, w.dtype, w.shape, w.nbytes) for w in info.weights][:3] == [
        ("dense/w", "float32", (4, 3), 48), ("dense/b", "float32", (3,), 12), ("layers/0/scale", "bfloat16", (3,), 6)]
    assert info.total_bytes == 48 + 12 + 6 + 3 + 3 + 8
    text = str(info)
    assert "layers/0/scale  bfloat16  (3,)" in text and "total" in text and "80" in text


INSPECT_IN_A_FRESH_PROCESS = """
import json, sys
import jaxport
info = jaxport.inspect(sys.argv[1])
loaded = sorted(m for m in sys.modules if m in ("jax", "jaxlib") or m.startswith(("jax.", "jaxlib.")))
print(json.dumps({"loaded": loaded, "functions": [f.name for f in info.functions],
                  "total": info.total_bytes, "table": info.weights_table()}))
"""


def test_inspect_of_a_bundle_loads_neither_jax_nor_jaxlib(saved: Path) -> None:
    done = subprocess.run([sys.executable, "-c", INSPECT_IN_A_FRESH_PROCESS, str(saved)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    assert result["functions"] == ["predict", "loss", "init"] and result["total"] == 80
    assert result["table"] == jaxport.inspect(saved).weights_table()  # type: ignore[union-attr]


def sharded_model() -> tuple[dict[str, jaxport.Exported], dict[str, Any], Any]:
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))
    params = {"w": jnp.arange(48, dtype=jnp.float32).reshape(6, 8) / 48, "b": jnp.ones(8, jnp.float32)}
    weights = {"w": NamedSharding(mesh, P(None, "model")), "b": NamedSharding(mesh, P())}
    x = NamedSharding(mesh, P("data", None))
    f = jax.jit(lambda p, x: jnp.tanh(x @ p["w"] + p["b"]), in_shardings=(weights, x),
                out_shardings=NamedSharding(mesh, P("data", "model")))
    exp = jaxport.export(f)(model.specs(params), jax.ShapeDtypeStruct((4, 6), jnp.float32))
    return {"predict": exp}, params, mesh


@pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 devices (tests/helpers/jax_setup.py)")
def test_a_sharded_bundle_places_each_weight_as_recorded_over_the_mesh(tmp_path: Path) -> None:
    from jax.sharding import NamedSharding, PartitionSpec as P

    functions, params, mesh = sharded_model()
    jaxport.save_bundle(tmp_path / "m", functions, params)
    x = jnp.arange(24, dtype=jnp.float32).reshape(4, 6) / 24
    want = jnp.tanh(x @ params["w"] + params["b"])
    for bundle in (jaxport.load_bundle(tmp_path / "m", mesh=mesh), jaxport.load_bundle(tmp_path / "m")):
        assert bundle.params["w"].sharding.is_equivalent_to(NamedSharding(mesh, P(None, "model")), 2)
        np.testing.assert_allclose(bundle["predict"](x), want, rtol=1e-6)
        placed = jax.device_put(x, NamedSharding(mesh, P("data", None)))
        np.testing.assert_allclose(jax.jit(bundle["predict"])(placed), want, rtol=1e-6)
    swapped = jaxport.load_bundle(tmp_path / "m", mesh=mesh).with_params(jax.tree.map(lambda a: a * 0, params))
    assert swapped.params["w"].sharding.is_equivalent_to(NamedSharding(mesh, P(None, "model")), 2)


@pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 devices (tests/helpers/jax_setup.py)")
def test_functions_that_shard_a_weight_differently_cannot_share_a_bundle(tmp_path: Path) -> None:
    from jax.sharding import NamedSharding, PartitionSpec as P

    functions, params, mesh = sharded_model()
    rows = {"w": NamedSharding(mesh, P("data", None)), "b": NamedSharding(mesh, P())}
    other = jaxport.export(jax.jit(lambda p: p["w"].sum(), in_shardings=(rows,)))(model.specs(params))
    with pytest.raises(BundleMismatchError, match="function 'total' .* at 'w': the sharding .* recorded by function 'predict'"):
        jaxport.save_bundle(tmp_path / "m", {**functions, "total": other}, params)
    assert not (tmp_path / "m").exists()


def test_the_command_line_inspects_a_bundle(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from jaxport.application.cli import main as cli

    assert cli.main(["inspect", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "init.jaxport (takes no weights):" in out and "dense/w         float32   (4, 3)       48" in out
    assert cli.main(["inspect", "--json", str(saved)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [w["name"] for w in doc["weights"]][:2] == ["dense/w", "dense/b"] and doc["metadata"]["epoch"] == 3


def test_the_function_files_do_not_grow_with_the_weights(tmp_path: Path) -> None:
    sizes = []
    for n in (2, 512):
        params = {"w": jnp.ones((n, n), jnp.float32)}
        exp = jaxport.export(jax.jit(lambda p, x: x @ p["w"]))(model.specs(params), jax.ShapeDtypeStruct((1, n), jnp.float32))
        jaxport.save_bundle(tmp_path / f"m{n}", {"f": exp}, params)
        sizes.append(((tmp_path / f"m{n}" / "f.jaxport").stat().st_size,
                      (tmp_path / f"m{n}" / "params.safetensors").stat().st_size))
    (small_f, small_w), (large_f, large_w) = sizes
    assert large_w > 1 << 20 and large_w > 10_000 * small_w // 200
    # The weights are not in the module: the function file stays the size of
    # the small model's (a few digits of the shapes differ), far below the weights'.
    assert large_f < 2 * small_f and large_f < large_w // 100, sizes


def test_inspect_of_a_large_bundle_keeps_every_line_short_and_json_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from jaxport.application.cli import main as cli

    params = {"blocks": [{"attn": {"w": jnp.ones((4, 4)), "b": jnp.zeros(4)},
                          "mlp": {"w": jnp.ones((4, 4)), "b": jnp.zeros(4)}} for _ in range(50)]}

    def predict(p: Any, x: jax.Array) -> jax.Array:
        for block in p["blocks"]:
            x = jnp.tanh(x @ block["attn"]["w"] + block["attn"]["b"])
        return x

    def step(p: Any, x: jax.Array) -> Any:
        return jax.tree.map(lambda w: w * 0.5, p), predict(p, x).sum()

    b, = jaxport.symbolic_shape("b")
    x = jax.ShapeDtypeStruct((b, 4), jnp.float32)
    p = model.specs(params)
    functions = {"predict": jaxport.export(jax.jit(predict))(p, x), "step": jaxport.export(jax.jit(step))(p, x)}
    jaxport.save_bundle(tmp_path / "m", functions, params, metadata={"notes": "n" * 500})
    assert cli.main(["inspect", str(tmp_path / "m")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 160
    assert "  predict(<params: 200 arrays>, float32[b,4]) -> float32[b,4]" in lines
    assert "  step(<params: 200 arrays>, float32[b,4]) -> (<params: 200 arrays>, float32[])" in lines
    assert cli.main(["inspect", "--json", str(tmp_path / "m")]) == 0
    doc = json.loads(capsys.readouterr().out)
    signature = doc["functions"][0]["artifact"]["signature"]
    assert signature.startswith("({'blocks': [{'attn': {'b': float32[4], 'w': float32[4,4]}, ")
    assert signature.count("float32[4,4]") == 100 and doc["metadata"]["notes"] == "n" * 500
