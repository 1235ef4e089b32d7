"""What the runtime benchmarks (``test_iree.py``, ``test_litert.py``, ``test_onnx.py``) share.

Their two models: the MLP of about 2,000 StableHLO operations (its weights
closed over: constants of its module), as an artifact, and the
GPT-2-small-sized transformer of ``models.py`` as a bundle whose ``predict``
takes ``int32[b, 64]`` token ids for a symbolic ``b``. And their "first
answer" benchmark: a fresh child process that imports what it needs, loads
one model, answers one call and reports its peak resident memory (``VmHWM``,
Linux only). Each benchmark names its targets' roles (how the child loads
the target's directory); every child also knows JAX's two roles,
``jaxport`` (``jaxport.load`` or ``load_bundle`` and a call) and
``jax.export`` (``jax.export.deserialize``, the weights read from the
bundle's safetensors file, a call), both with JAX's persistent compilation
cache kept in the folder the caller names. Beside them: each runtime's own
baseline (:func:`runtime_baselines`: a trivial model opened with the runtime
alone), and each target's very first answer (:func:`very_first_answers`: the
first process on a directory, before jaxport's verdict store knows it; the
timed answers find it warm).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .models import GPT_TOKENS, LAYERS_2K, MlpFactory, gpt, gpt_params, input_spec

#: How many fresh processes one "first answer" benchmark times.
FRESH_ROUNDS = 2
#: JAX's settings, as environment variables, of a cache that keeps every compilation.
KEEP_EVERY_COMPILATION = {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                          "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1"}

_OPENING = """
import json, os, sys
import numpy as np
model, role, root = sys.argv[1:]
x = np.ones((8, 16), np.float32) if model == "mlp" else np.zeros((1, 64), np.int32)
"""
_TARGET = """
{keyword} {condition}:
    import jaxport
    functions = {load}
    result = functions[next(iter(functions))](x)
"""
_JAX = """
elif role == "jaxport":
    import jaxport
    if model == "mlp":
        result = jaxport.load(root + "/mlp.jaxport").call(x)
    else:
        result = jaxport.load_bundle(root + "/bundle")["predict"](x)
else:
    import jax
    from jax import export
    path = root + ("/mlp.jaxport" if model == "mlp" else "/bundle/predict.jaxport")
    exp = export.deserialize(bytearray(open(path, "rb").read()))
    if model == "mlp":
        result = exp.call(x)
    else:
        from safetensors.numpy import load_file
        weights = load_file(root + "/bundle/params.safetensors")
        names = [leaf["key_path"] for leaf in json.load(open(root + "/bundle/manifest.json"))["params"]["leaves"]]
        params = jax.tree_util.tree_unflatten(exp.in_tree.children()[0].children()[0], [weights[n] for n in names])
        result = exp.call(params, x)
"""
_CLOSING = """
np.asarray(result)
# The peak of this process's own memory (ru_maxrss would count the parent's: it survives exec).
peak = next((int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
            if os.path.exists("/proc/self/status") else None)
print(json.dumps({"peak_bytes": peak}))
"""


def child_script(targets: Mapping[str, str]) -> str:
    """The child's script: ``python -c SCRIPT KIND ROLE ROOT`` (``KIND``: ``mlp`` or ``transformer``).

    Args:
        targets: for each target role, a condition on ``role`` (``'role == "iree"'``) -> the
            expression that loads the target's directory under ``root`` (``'jaxport.load_iree(root + "/iree")'``).
            The other roles are JAX's.
    """
    branches = [_TARGET.format(keyword="if" if i == 0 else "elif", condition=condition, load=load).strip()
                for i, (condition, load) in enumerate(targets.items())]
    return "\n".join([_OPENING.strip(), *branches, _JAX.strip(), _CLOSING.strip()]) + "\n"


def run_child(script: str, kind: str, role: str, root: Path, cache: Path) -> dict[str, Any]:
    """Runs ``script`` (from :func:`child_script`) in a fresh process; what it reports (``peak_bytes``).

    Args:
        kind: ``"mlp"`` or ``"transformer"``.
        role: the role the child plays.
        root: the folder of the model's files.
        cache: JAX's persistent compilation cache, which keeps every compilation.
    """
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache), **KEEP_EVERY_COMPILATION}
    done = subprocess.run([sys.executable, "-c", script, kind, role, str(root)], env=env,
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def very_first_answers(child: Callable[[str], dict[str, Any]], roles: Sequence[str]) -> dict[str, float]:
    """The wall time of one fresh child per role, each the first process to load its directory with
    its options: jaxport's verdict store (the run's own, ``conftest.py``) knows nothing of it yet, so
    it checks every digest and verifies. Afterwards the store is warm, as the timed first answers
    (:func:`time_first_answers`) find it."""
    found = {}
    for role in roles:
        start = time.perf_counter()
        child(role)
        found[role] = time.perf_counter() - start
    return found


def time_first_answers(benchmark: BenchmarkFixture, child: Callable[[], dict[str, Any]]) -> None:
    """Times :data:`FRESH_ROUNDS` fresh children; records their median peak memory as ``peak_bytes``."""
    peaks: list[int | None] = []
    benchmark.pedantic(lambda: peaks.append(child()["peak_bytes"]), rounds=FRESH_ROUNDS,
                       iterations=1, warmup_rounds=0)
    known = [p for p in peaks if p is not None]
    benchmark.extra_info["peak_bytes"] = int(np.median(known)) if known else None


#: The child of a runtime's baseline: ``python -c SCRIPT TARGET DIRECTORY`` loads the one model of
#: ``DIRECTORY`` (a converted trivial function, ``f32[1] -> f32[1]``) with the runtime's own API, no
#: jaxport, answers one call and reports its peak resident memory.
BASELINE_SCRIPT = """
import glob, json, os, sys
import numpy as np
target, directory = sys.argv[1:]
x = np.ones((1,), np.float32)
if target == "onnx":
    import onnxruntime as ort
    session = ort.InferenceSession(glob.glob(directory + "/*.onnx")[0], providers=["CPUExecutionProvider"])
    session.run(None, {session.get_inputs()[0].name: x})
elif target == "litert":
    from ai_edge_litert import interpreter
    model = interpreter.Interpreter(model_path=glob.glob(directory + "/*.tflite")[0])
    key, names = next(iter(model.get_signature_list().items()))
    model.get_signature_runner(key)(**{names["inputs"][0]: x})
else:
    import iree.runtime as rt
    module = rt.load_vm_flatbuffer_file(glob.glob(directory + "/*.vmfb")[0], driver="local-task")
    np.asarray(module.main(x))
""" + _CLOSING.split("\n", 2)[2]
#: How each target converts (``jaxport.to_<target>``).
_CONVERTERS = {"onnx": "to_onnx", "litert": "to_litert", "iree": "to_iree"}


def runtime_baselines(root: Path, targets: Sequence[str]) -> dict[str, int | None]:
    """Each target's runtime's own baseline: the median peak resident memory of :data:`FRESH_ROUNDS`
    fresh processes that load a trivial model (``f32[1] -> f32[1]``, converted under ``root``) with
    the runtime alone and call it once (None where ``/proc`` is missing)."""
    fun = jax.jit(lambda x: x + 1.0)
    source = root / "trivial.jaxport"
    jaxport.save(jaxport.export(fun)(jax.ShapeDtypeStruct((1,), jnp.float32)), source)
    found: dict[str, int | None] = {}
    for target in targets:
        directory = root / f"trivial-{target}"
        getattr(jaxport, _CONVERTERS[target])(source, directory, overwrite=True)
        peaks = []
        for _ in range(FRESH_ROUNDS):
            done = subprocess.run([sys.executable, "-c", BASELINE_SCRIPT, target, str(directory)],
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0:
                raise RuntimeError(done.stderr[-3000:])
            peaks.append(json.loads(done.stdout.strip().splitlines()[-1])["peak_bytes"])
        known = [p for p in peaks if isinstance(p, int)]
        found[target] = int(np.median(known)) if known else None
    return found


def weights_bytes(root: Path) -> int:
    """What the weights of the model saved under ``root`` take: the bundle's safetensors file, or the
    whole ``mlp.jaxport`` (the MLP's weights are constants of its module)."""
    params = root / "bundle" / "params.safetensors"
    return (params if params.exists() else root / "mlp.jaxport").stat().st_size


def save_mlp(root: Path) -> tuple[Path, Any, tuple[Any, ...]]:
    """Saves the MLP as ``root/mlp.jaxport``; its path, the original function (jitted) and its arguments."""
    fun = MlpFactory.with_layers(LAYERS_2K).make()
    jaxport.save(jaxport.export(jax.jit(fun))(input_spec()), root / "mlp.jaxport")
    return root / "mlp.jaxport", jax.jit(fun), (np.ones((8, 16), np.float32),)


def save_transformer(root: Path) -> tuple[Path, Any, tuple[Any, ...]]:
    """Saves the transformer as the bundle ``root/bundle``; its path, the original function (jitted) and
    its arguments at ``b = 1`` (the weights on the device)."""
    params = gpt_params()
    b, = jaxport.symbolic_shape("b")
    spec = jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params)
    exp = jaxport.export(jax.jit(gpt))(spec, jax.ShapeDtypeStruct((b, GPT_TOKENS), jnp.int32))
    jaxport.save_bundle(root / "bundle", {"predict": exp}, params)
    return root / "bundle", jax.jit(gpt), (jax.device_put(params), np.zeros((1, GPT_TOKENS), np.int32))
