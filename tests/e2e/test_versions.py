"""End to end: the versions that wrote an artifact or a bundle, and which consumers can read it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.export
import jax.numpy as jnp
import jaxlib.version
import numpy as np
import pytest

import jaxport
from jaxport.application.cli.main import main
from jaxport.domain.artifact.integrity import Extension, seal, unseal
from jaxport.adapters.mlir.bindings import export_target_version
from jaxport.domain.artifact.producer import Producer
from jaxport.errors import UsageError

SPEC = jax.ShapeDtypeStruct((3,), jnp.float32)
HERE = Producer(jaxport.__version__, jax.__version__, jaxlib.version.__version__, export_target_version())


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("versions")
    exp = jaxport.export(jax.jit(jnp.sin))(SPEC)
    out = {"sealed": root / "sealed.jaxport", "unsealed": root / "unsealed.jaxport",
           "jax_export": root / "jax_export.bin", "bundle": root / "bundle"}
    out["sealed"].write_bytes(exp.serialize())
    out["unsealed"].write_bytes(exp.serialize(integrity=False))
    out["jax_export"].write_bytes(jax.export.export(jax.jit(jnp.sin))(SPEC).serialize())
    weighted = jaxport.export(jax.jit(lambda p, x: p["w"] * x))({"w": SPEC}, SPEC)
    jaxport.save_bundle(out["bundle"], {"f": weighted}, {"w": jnp.ones(3)})
    return out


def test_sealed_artifacts_and_bundles_record_the_versions_that_wrote_them(files: dict[str, Path]) -> None:
    assert jaxport.inspect(files["sealed"]).producer == HERE
    assert jaxport.inspect(files["unsealed"]).producer is None
    assert jaxport.inspect(files["jax_export"]).producer is None
    bundle = jaxport.inspect(files["bundle"])
    assert isinstance(bundle, jaxport.BundleInfo)
    assert bundle.producer == HERE and bundle.functions[0].artifact.producer == HERE
    assert json.loads((files["bundle"] / "manifest.json").read_text())["producer"] == HERE.to_json()
    assert f"written by: jaxport {jaxport.__version__}, jax {jax.__version__}" in str(bundle)


def test_inspect_shows_the_producer_and_its_json_has_a_producer_object_only_when_recorded(
        files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(files["sealed"])]) == 0
    assert f"  written by: {HERE}" in capsys.readouterr().out
    assert main(["inspect", "--json", *(str(files[k]) for k in ("sealed", "unsealed", "jax_export", "bundle"))]) == 0
    sealed, unsealed, theirs, bundle = map(json.loads, capsys.readouterr().out.splitlines())
    assert sealed["producer"] == HERE.to_json()
    assert "producer" not in unsealed and "producer" not in theirs
    assert bundle["producer"] == HERE.to_json()
    assert bundle["functions"][0]["artifact"]["producer"] == HERE.to_json()


def test_diff_does_not_count_a_different_producer_as_a_difference(
        files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parts = unseal(files["sealed"].read_bytes())
    assert parts.extension is not None
    older = Producer("0.0.9", "0.9.2", "0.9.2", "1.14.0")
    resealed = tmp_path / "older.jaxport"
    resealed.write_bytes(seal(parts.flatbuffer, Extension(parts.extension.constraints, older)))
    assert main(["diff", str(files["sealed"]), str(resealed)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"written by different versions (not a difference of the program): {files['sealed']}: {HERE}; "
        f"{resealed}: {older}"]


#: On jax 0.11.2 and later jaxport writes what the installed JAX's jax.export targets (1.18.0 on
#: 0.11.2 and 0.12.0.1, 1.22.0 on 0.12.1), which JAX 0.10.2 and older and TensorFlow 2.21 do not
#: read; on jax 0.10.2, 1.15.0, which they read.
TARGET = export_target_version()
NEW_TARGET = TARGET != "1.15.0"
YES = (("jax==0.11.2", "JAX 0.11.2"), ("jax==0.12.0.1", "JAX 0.12.0.1")) if NEW_TARGET else (
    ("jax==0.8.3", "JAX 0.8.3"), ("jax==0.9.2", "JAX 0.9.2"), ("tf==2.21", "TensorFlow 2.21.0"))


@pytest.mark.parametrize("path", ["sealed", "unsealed", "jax_export", "bundle"])
def test_the_consumer_check_says_yes_for_jax_0_8_3_and_0_9_2_and_no_for_0_7_2_with_its_reasons(
        files: dict[str, Path], path: str, capsys: pytest.CaptureFixture[str]) -> None:
    target = str(files[path])
    assert main(["check", target, *[a for spec, _ in YES for a in ("--consumer", spec)]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ", 2)[1] for line in lines] == [name for _, name in YES]
    assert all(line.split(": ", 3)[2].startswith("yes") for line in lines)
    assert main(["check", target, "--consumer", "jax==0.7.2"]) == 1
    no = capsys.readouterr().out
    assert f"{target}: JAX 0.7.2: no: " in no and "0 devices" in no and "source: " in no
    if NEW_TARGET:
        assert main(["check", target, "--consumer", "jax==0.10.2"]) == 1
        assert f"the module targets StableHLO {TARGET}, and it reads StableHLO up to 1.17.0" in capsys.readouterr().out
    assert main(["check", target, "--json", "--consumer", "tf==2.19"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and any("window [4, 9]" in r for r in doc["reasons"])


def test_the_python_api_and_a_consumer_the_table_lacks(files: dict[str, Path],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    spec, name = YES[1]
    verdict = jaxport.check_consumer(files["sealed"].read_bytes(), spec)
    assert verdict.ok and str(verdict.consumer) == name
    assert not jaxport.check_consumer(files["bundle"], "jax==0.7.2").ok
    with pytest.raises(UsageError, match="knows no jax 0.4.30"):
        jaxport.check_consumer(files["sealed"], "jax==0.4.30")
    assert main(["check", str(files["sealed"]), "--consumer", "jax==0.4.30"]) == 2
    assert "jaxport knows no jax 0.4.30" in capsys.readouterr().err


def test_loading_keeps_working_whatever_the_producer_says(files: dict[str, Path]) -> None:
    loaded = jaxport.deserialize(files["sealed"].read_bytes())
    np.testing.assert_allclose(loaded.call(np.ones(3, np.float32)), np.sin(np.ones(3)), rtol=1e-6)


def test_the_consumer_check_imports_no_jax(files: dict[str, Path]) -> None:
    probe = ("import sys\nfrom jaxport.application.cli.main import main\n"
             f"status = main(['check', {str(files['bundle'])!r}, '--consumer', {YES[1][0]!r}])\n"
             "print(status, sorted(m for m in sys.modules if m in ('jax', 'jaxlib', 'numpy')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stdout + done.stderr
