"""``jaxport convert`` where TensorFlow never loads: bad arguments, and TensorFlow not installed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxport
from jaxport.application.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("convert") / "f.jaxport"
    jaxport.save(jaxport.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((3,), jnp.float32)), path)
    return path


def test_a_missing_source_or_an_existing_target_is_the_users_mistake(
        artifact: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(tmp_path / "missing.jaxport"), "--to", "savedmodel", "-o", str(tmp_path / "out")]) == 2
    assert "jaxport convert: UsageError: " in capsys.readouterr().err
    (tmp_path / "taken").mkdir()
    assert main(["convert", str(artifact), "--to", "savedmodel", "-o", str(tmp_path / "taken")]) == 2
    assert "FileExistsError" in capsys.readouterr().err and os.listdir(tmp_path / "taken") == []


def test_without_tensorflow_the_conversion_names_the_extra_to_install(artifact: Path, tmp_path: Path) -> None:
    probe = ("import sys\nsys.modules['tensorflow'] = None  # as if it were not installed\n"
             "from jaxport.application.cli.main import main\n"
             f"sys.exit(main(['convert', {str(artifact)!r}, '--to', 'savedmodel', '-o', {str(tmp_path / 'out')!r}]))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    assert done.returncode == 2, done.stderr
    assert "MissingExtraError: TensorFlow is not installed" in done.stderr
    assert "pip install 'jaxport[tf]'" in done.stderr
    assert not (tmp_path / "out").exists()


#: For each target, a module of its extra to hide, and the extra that converting needs (the converter's, also
#: where the missing module is the runtime's: a conversion reads back what it writes).
CONVERTERS_EXTRAS = [("litert", "ai_edge_litert", "litert"), ("litert", "litert_converter", "litert"),
                     ("onnx", "onnx", "onnx"), ("iree", "iree.compiler", "iree")]


def test_without_a_converters_package_the_conversion_names_the_converters_extra(
        artifact: Path, tmp_path: Path) -> None:
    probe = ("import sys\nfrom jaxport.application.cli.main import main\n"
             "for target, hidden in zip(sys.argv[1::2], sys.argv[2::2]):\n"
             "    sys.modules[hidden] = None  # as if it were not installed\n"
             f"    main(['convert', {str(artifact)!r}, '--to', target, '-o', {str(tmp_path / 'out')!r}])\n"
             "    del sys.modules[hidden]\n"
             "    for name in [n for n in sys.modules if n.startswith('jaxport.adapters.' + target)]:\n"
             "        del sys.modules[name]\n")
    done = subprocess.run([sys.executable, "-c", probe, *(a for t, m, _ in CONVERTERS_EXTRAS for a in (t, m))],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])})
    said = [line for line in done.stderr.splitlines() if line.startswith("jaxport convert: ")]
    assert len(said) == len(CONVERTERS_EXTRAS), done.stderr
    for line, (target, hidden, extra) in zip(said, CONVERTERS_EXTRAS):
        assert "MissingExtraError" in line and line.endswith(f"pip install 'jaxport[{extra}]'"), (target, hidden, line)
    assert not (tmp_path / "out").exists()


def test_the_converted_result_prints_as_the_one_line_the_command_prints(artifact: Path, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx", reason="converting to ONNX needs the jaxport[onnx] extra")
    manifest = jaxport.convert(artifact, tmp_path / "py", to="onnx")
    assert str(manifest) == repr(manifest)
    assert re.fullmatch(r"<ConvertedManifest of onnx: 1 function \(sin\), 1 variant, \d+ bytes>", repr(manifest))
    assert main(["convert", str(artifact), "--to", "onnx", "-o", str(tmp_path / "cli")]) == 0
    assert f": ONNX with {manifest.brief()}; " in capsys.readouterr().out
