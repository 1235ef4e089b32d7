"""jaxport's converted ONNX directories in ONNX Runtime Web: under Node, and in a real headless Chromium.

The models of :mod:`tests.helpers.web_models` are converted once for the
module. Three checks share them:

* the shared list of bad calls (``tests/web/bad_calls.json``) is what
  jaxport's Python front raises today;
* ``node --test tests/web/`` (``jaxport.mjs``'s unit tests, onnxruntime-web
  on WebAssembly under Node) passes on them, every model's golden examples
  included;
* Debian's Chromium, driven by playwright-core, opens the demo page
  (``docs/web/index.html``) on the GPT-2-like model from a server on
  127.0.0.1, runs its golden examples and the bad calls in the page, and
  takes a screenshot (into the test's temporary directory).

The npm packages (``package.json``) and Chromium come from ``make
web-deps``; without them these tests are skipped with a message saying so.
Node, npm and Chromium get ``HOME`` and ``XDG_*`` inside the temporary
directory, and Chromium a fresh profile and no background connections.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("onnx", reason="the web tests convert to ONNX: they need the jaxport[onnx] extra (onnx)")

from jaxport.domain.converted.manifest import MANIFEST_FILE, ConvertedManifest  # noqa: E402
from tests.helpers.web_bad_calls import bad_calls  # noqa: E402
from tests.helpers.web_batch import WebBatch, node_ready  # noqa: E402
from tests.helpers.web_models import build  # noqa: E402
from tests.helpers.web_paths import BAD_CALLS, MODULE, ROOT  # noqa: E402

NODE = shutil.which("node")
ORT = ROOT / "node_modules" / "onnxruntime-web" / "dist"
PLAYWRIGHT = ROOT / "node_modules" / "playwright-core"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PAGE = ROOT / "docs" / "web" / "index.html"
#: How long one Node or browser run may take (a bound, not a measure).
LIMIT_S = 240


def _need_node() -> None:
    if NODE is None:
        pytest.skip("node is not installed: make web-deps installs Node.js and the npm packages")
    if not ORT.is_dir() or not PLAYWRIGHT.is_dir():
        pytest.skip("the npm packages of package.json are not installed: run make web-deps (npm ci)")


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each test model converted to ONNX with ``jaxport.mjs``."""
    return build(tmp_path_factory.mktemp("web-models"))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of Node and Chromium: their home and XDG directories in a temporary directory."""
    root = tmp_path_factory.mktemp("web-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("XDG_")}
    env.update(HOME=str(root), XDG_CONFIG_HOME=str(root / "config"), XDG_CACHE_HOME=str(root / "cache"),
               XDG_DATA_HOME=str(root / "data"), XDG_RUNTIME_DIR=str(root / "run"), TMPDIR=str(root))
    for key in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
        os.makedirs(env[key], mode=0o700)
    return env


def test_bad_calls_list_is_what_python_raises(converted: dict[str, Path]) -> None:
    expected = bad_calls(converted)
    committed = json.loads(BAD_CALLS.read_text(encoding="utf-8"))
    assert committed == expected, "tests/web/bad_calls.json differs from jaxport's Python errors: " \
                                  "run python -m tests.helpers.web_bad_calls"
    assert {c["what"] for c in committed["calls"]} >= {"wrong dtype", "wrong rank", "size outside a constraint"}


def test_module_is_in_every_converted_directory(converted: dict[str, Path]) -> None:
    for path in converted.values():
        manifest = ConvertedManifest.from_json((path / MANIFEST_FILE).read_bytes())
        assert MODULE.name in manifest.files
        assert (path / MODULE.name).read_bytes() == MODULE.read_bytes()


def test_convert_web_on_the_command_line(converted: dict[str, Path], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from jaxport.application.cli.main import main

    bundle = converted["mlp"].parent / "bundles" / "mlp"
    assert main(["convert", str(bundle), "--to", "onnx", "--web", "-o", str(tmp_path / "web")]) == 0
    web = ConvertedManifest.from_json((tmp_path / "web" / MANIFEST_FILE).read_bytes())
    api = ConvertedManifest.from_json((converted["mlp"] / MANIFEST_FILE).read_bytes())  # to_onnx(web=True)
    assert MODULE.name in web.files and set(web.files) == set(api.files)
    assert (tmp_path / "web" / MODULE.name).read_bytes() == MODULE.read_bytes()
    assert main(["convert", str(bundle), "--to", "iree", "--web", "-o", str(tmp_path / "iree")]) == 2
    assert "--web applies to --to onnx, not to --to iree" in capsys.readouterr().err
    assert not (tmp_path / "iree").exists()


def test_web_refuses_a_bfloat16_boundary_before_writing(tmp_path: Path) -> None:
    import jax
    import jax.numpy as jnp

    import jaxport
    from jaxport.errors import ConversionError

    exported = jaxport.export(jax.jit(lambda x: x * 2))(jax.ShapeDtypeStruct((3,), jnp.bfloat16))
    with pytest.raises(ConversionError, match="bfloat16"):
        jaxport.to_onnx(exported, tmp_path / "web", web=True)
    assert not (tmp_path / "web").exists()


def test_node_unit_tests(converted: dict[str, Path], home: dict[str, str]) -> None:
    _need_node()
    root = next(iter(converted.values())).parent
    run = subprocess.run([str(NODE), "--test", "--test-reporter=spec", "tests/web/"], cwd=ROOT,
                         env={**home, "JAXPORT_WEB_FIXTURES": str(root)}, capture_output=True, text=True,
                         timeout=LIMIT_S)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert "# skipped 0" in run.stdout or "skipped 0" in run.stdout, run.stdout[-3000:]


#: Sizes beyond the golden examples': model -> (function, input shapes per call).
SIZES: dict[str, tuple[str, list[list[tuple[int, ...]]]]] = {"gpt": ("logits", [[(1, 1)], [(3, 40)]]), "bert": ("encode", [[(4, 9), (4, 9)]]),
         "mlp": ("predict", [[(7, 16)]]), "kw": ("mix", [[(3, 6), (5,)]]), "stats": ("stats", [[(5, 3), (5, 3)]])}


def test_models_equal_onnx_runtime_at_other_sizes(converted: dict[str, Path], home: dict[str, str],
                                                  tmp_path: Path) -> None:
    """Each model's .onnx, run by onnxruntime-web and by ONNX Runtime for Python on the same inputs, agree."""
    why = node_ready()
    if why:
        pytest.skip(why)
    import numpy as np
    import onnxruntime

    rng = np.random.default_rng(8)
    batch = WebBatch(tmp_path / "batch")
    for name, (function, calls) in SIZES.items():
        manifest = ConvertedManifest.from_json((converted[name] / MANIFEST_FILE).read_bytes())
        sig = manifest.function(function).signature
        model = converted[name] / f"{function}.onnx"
        session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        for shapes in calls:
            inputs = {n: (rng.integers(0, 90, size=s) if a.dtype.value == "int32" else rng.normal(size=s))
                      .astype(a.dtype.value) for n, a, s in zip(sig.input_names, sig.in_avals, shapes)}
            expected = dict(zip(sig.output_names, session.run(list(sig.output_names), inputs)))
            batch.add(f"{name} {shapes}", model.read_bytes(), inputs, expected,
                      {"params.safetensors": converted[name] / "params.safetensors"} if sig.nr_weights else {})
    assert batch.run(home) == []


def test_the_batch_reports_a_value_outside_the_tolerance_and_a_missing_kernel(home: dict[str, str],
                                                                            tmp_path: Path) -> None:
    """What the ONNX tests' batches check: element by element with a test's tolerance, and a kernel that
    onnxruntime-web lacks (Where on uint32, which ONNX Runtime for Python has) fails the case."""
    why = node_ready()
    if why:
        pytest.skip(why)
    import numpy as np
    from onnx import TensorProto, helper

    def where(dtype: int) -> bytes:
        ports = [helper.make_tensor_value_info(n, TensorProto.BOOL if n == "c" else dtype, [3]) for n in "cxyz"]
        graph = helper.make_graph([helper.make_node("Where", ["c", "x", "y"], ["z"])], "g", ports[:3], ports[3:])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
        return bytes(model.SerializeToString())

    c, x, y = np.array([True, False, True]), np.array([1.0, 2.0, 3.0], np.float32), np.zeros(3, np.float32)
    batch = WebBatch(tmp_path / "batch")
    batch.add("exact", where(TensorProto.FLOAT), {"c": c, "x": x, "y": y}, {"z": np.array([1, 0, 3], np.float32)},
              tolerance=(1e-6, 0.0))
    batch.add("off", where(TensorProto.FLOAT), {"c": c, "x": x, "y": y}, {"z": np.array([1, 0, 3.001], np.float32)},
              tolerance=(1e-6, 0.0))
    batch.add("uint32", where(TensorProto.UINT32), {"c": c, "x": x.astype(np.uint32), "y": y.astype(np.uint32)},
              {"z": np.array([1, 0, 3], np.uint32)})
    failures = batch.run(home)
    assert len(failures) == 2, failures
    assert failures[0].startswith("off: z: element 2 is 3 where 3.00") and "rtol 0.000001" in failures[0]
    assert failures[1].startswith("uint32: ") and "Could not find an implementation for Where" in failures[1]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture()
def site(converted: dict[str, Path], tmp_path: Path) -> Iterator[str]:
    """The demo page, the GPT-2-like model and onnxruntime-web, served on 127.0.0.1; yields the page's URL."""
    _need_node()
    root = tmp_path / "site"
    root.mkdir()
    shutil.copyfile(PAGE, root / "index.html")
    shutil.copytree(converted["gpt"], root / "model")
    (root / "ort").symlink_to(ORT, target_is_directory=True)
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html?model=model/&ort=ort/ort.wasm.min.mjs"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_gpt_in_headless_chromium(site: str, home: dict[str, str], tmp_path: Path) -> None:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (make web-deps installs Debian's chromium; "
                    "this machine could not)")
    screenshot = tmp_path / "web-demo.png"
    run = subprocess.run([str(NODE), "tests/web/browser.mjs", site, str(screenshot), str(BAD_CALLS), "gpt"], cwd=ROOT,
                         env={**home, "CHROMIUM": CHROMIUM}, capture_output=True, text=True, timeout=LIMIT_S)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    page = json.loads(run.stdout.strip().splitlines()[-1])
    assert page["error"] is None, page
    report = page["report"]
    assert report["ok"] and report["examples"] == 2, report
    assert [row[-1] for row in page["rows"]] == ["pass", "pass"]
    assert page["status"].startswith("2 golden examples on ONNX Runtime Web: all outputs within jaxport's tolerances")
    expected = [c for c in json.loads(BAD_CALLS.read_text(encoding="utf-8"))["calls"] if c["model"] == "gpt"]
    assert [(c["what"], c["error"], c["message"]) for c in page["badCalls"]] == \
        [(c["what"], c["error"], c["message"]) for c in expected]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"time to first answer in Chromium (GPT-2-like, WebAssembly): {page['firstAnswerMs']:.0f} ms")
