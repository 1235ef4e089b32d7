"""ONNX Runtime behind the runtime port: one ``.onnx`` file run on flat NumPy arrays.

The only module that imports ``onnxruntime`` (the ``jaxport[onnx-runtime]``
extra); it imports neither JAX nor jaxlib. Before ONNX Runtime opens a
model, :func:`check_external_data` reads it (:mod:`.model_file`: protobuf's
wire format, without the ``onnx`` package) and refuses every external-data location that is not valid
UTF-8, is absolute, leaves the model's directory (``..``), passes through a
symbolic link or names a file the caller did not list: ONNX Runtime would
otherwise read any file the process can. Loading a directory runs that
check, and matches each model's inputs and outputs to its manifest, for
every model before the first call; ONNX Runtime's session is made at the
model's first call. ONNX Runtime's errors become jaxport's here, in
:func:`_onnx_runtime_errors`: an ``ArtifactError`` naming the model file
when its session cannot be made, an ``ArtifactCallError`` when a call
fails; a bad session option is a ``UsageError``.

Sessions are tuned by default (each overridable; see docs/onnx.md, "Speed
and memory"): ONNX Runtime's graph optimizations all on (``"all"``); as many
intra-op threads as this process may run on (:func:`machine_threads`, the
CPU affinity, not the machine's whole count); the thread pool's spinning
off (``spinning=False``: a waiting thread sleeps instead of holding a core,
which on a loaded or shared machine costs other work more than it saves);
the model opened from its path, so that ONNX Runtime reads the external
weights from the file itself (it maps them where the platform allows)
instead of a copy of the bytes in Python.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from jaxport.domain.converted.manifest import ConvertedManifest, Variant
from jaxport.domain.errors import ArtifactCallError, ArtifactError, MissingExtraError, UsageError
from jaxport.domain.targets.onnx import BFLOAT16_INPUTS, BFLOAT16_OUTPUTS

from .model_file import ModelFacts, WireError, read_model

try:
    import onnxruntime as ort
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("ONNX Runtime (onnxruntime)", "onnx-runtime", exc) from exc


#: ``optimization`` names -> ONNX Runtime's graph optimization levels.
OPTIMIZATION_LEVELS = {
    "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def machine_threads() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it, else the machine's)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else os.cpu_count() or 1)


def check_external_data(path: str | os.PathLike[str], allowed: Collection[str]) -> ModelFacts:
    """What running the model at ``path`` needs of it, once every external-data location in it is checked.

    Args:
        path: the ``.onnx`` file.
        allowed: the file names (relative to the model's directory) that its
            external data may name.

    Raises:
        ArtifactError: the file is not an ONNX model, or a tensor's external
            data is not valid UTF-8, is absolute, leaves the directory, passes
            through a symbolic link or names a file not in ``allowed`` (the
            message names the file, the tensor and the location).
    """
    model_path = Path(path)
    try:
        facts = read_model(model_path.read_bytes())
    except WireError as exc:
        raise ArtifactError(f"{model_path.name} is not a valid ONNX model: {exc}") from exc
    directory = model_path.resolve().parent
    refusals: dict[bytes, str] = {}  # each location once: a model's weights name one file, each tensor again
    for tensor in facts.external:
        for raw in tensor.locations or (b"",):
            if raw not in refusals:
                try:
                    location: str | bytes = raw.decode("utf-8")
                except UnicodeDecodeError:
                    location = raw
                refusals[raw] = _refusal(directory, location, allowed)
            why = refusals[raw]
            if why:
                shown = raw.decode("utf-8", "backslashreplace")
                raise ArtifactError(f"{model_path.name}: the tensor '{tensor.name}' reads its data from "
                                    f"'{shown}', {why}")
    return facts


def _refusal(directory: Path, location: str | bytes, allowed: Collection[str]) -> str:
    """Why an external-data location may not be read (``""``: it may)."""
    if isinstance(location, bytes):
        return "which is not valid UTF-8"
    if "\0" in location:
        return "which holds a NUL character"
    if os.path.isabs(location):
        return "which is an absolute path"
    if ".." in Path(location).parts:
        return "which leaves the model's directory (..)"
    if Path(location).as_posix() not in allowed:
        return f"which is not one of the files {sorted(allowed)} next to the model"
    if os.path.realpath(directory / location) != os.path.normpath(directory / location):
        return "which is or passes through a symbolic link"
    return ""


@contextmanager
def _onnx_runtime_errors(function: str, *, opening: str = "") -> Iterator[None]:
    """ONNX Runtime's errors (its pybind11 types: ``Fail``, ``InvalidGraph``, ...) as jaxport's,
    ONNX Runtime's words kept: an :class:`~jaxport.errors.ArtifactError` naming the model file
    ``opening`` while its session is made, else an :class:`~jaxport.errors.ArtifactCallError`
    naming ``function``."""
    try:
        yield
    except Exception as exc:  # pybind11's types have no common base below Exception
        if opening:
            raise ArtifactError(f"ONNX Runtime cannot open {opening}: {type(exc).__name__}: {exc}") from exc
        raise ArtifactCallError(function, exc) from exc


def session_options(*, threads: int | None = None, inter_op_threads: int | None = None,
                    optimization: str = "all", spinning: bool = False) -> ort.SessionOptions:
    """ONNX Runtime's session options for :class:`OnnxRuntimeModel`'s arguments of the same names.

    Raises:
        UsageError: a value of the wrong type or out of range.
    """
    if optimization not in OPTIMIZATION_LEVELS:
        raise UsageError(f"optimization is one of {sorted(OPTIMIZATION_LEVELS)}, not {optimization!r}")
    for name, value in (("threads", threads), ("inter_op_threads", inter_op_threads)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise UsageError(f"{name}={value!r} is not an int >= 0")
    if not isinstance(spinning, bool):
        raise UsageError(f"spinning={spinning!r} is not a bool")
    options = ort.SessionOptions()
    options.graph_optimization_level = OPTIMIZATION_LEVELS[optimization]
    options.intra_op_num_threads = machine_threads() if threads is None else threads
    if inter_op_threads is not None:
        options.inter_op_num_threads = inter_op_threads
    for pool in ("intra_op", "inter_op"):
        options.add_session_config_entry(f"session.{pool}.allow_spinning", "1" if spinning else "0")
    options.log_severity_level = 3  # errors only: its warnings are about its own folding
    return options


def _providers(providers: Sequence[str] | None) -> list[str]:
    """The execution providers to ask for (an unavailable one: ONNX Runtime warns and falls back).

    Raises:
        UsageError: not a list of names.
    """
    if providers is None:
        return ["CPUExecutionProvider"]
    if isinstance(providers, str) or not all(isinstance(p, str) for p in providers) or not providers:
        raise UsageError(f"providers={providers!r} is not a list of ONNX Runtime's execution provider names")
    return list(providers)


class OnnxRuntimeModel:
    """One ``.onnx`` model, checked now, run in an ONNX Runtime session made at its first call.

    Args:
        path: the model file; checked by :func:`check_external_data` first.
        allowed: the files its external data may name (next to it).
        function: the function's name, for messages.
        threads: ONNX Runtime's intra-op threads (None: :func:`machine_threads`; 0: ONNX Runtime's own
            default, one per physical core).
        inter_op_threads: its inter-op threads (None: its default).
        optimization: one of :data:`OPTIMIZATION_LEVELS`.
        spinning: whether idle threads of the pool spin waiting for work (ONNX Runtime's default) or sleep.
        providers: the execution providers, in order of preference (None: the CPU's).

    Attributes:
        input_names, output_names: the graph's inputs (its initializers left out) and outputs, in order.

    Raises:
        UsageError: a bad session option.
        ArtifactError: what :func:`check_external_data` refuses.
    """

    def __init__(self, path: str | os.PathLike[str], *, allowed: Collection[str] = (), function: str = "",
                 threads: int | None = None, inter_op_threads: int | None = None, optimization: str = "all",
                 providers: Sequence[str] | None = None, spinning: bool = False) -> None:
        self._options = session_options(threads=threads, inter_op_threads=inter_op_threads,
                                        optimization=optimization, spinning=spinning)
        self._providers = _providers(providers)
        self._path = os.fspath(path)
        self.function = function or Path(path).stem
        model = check_external_data(path, allowed)
        #: bfloat16 ports, float32 in the graph (see :mod:`jaxport.adapters.onnx.translate`): converted here.
        self._bfloat16_inputs, self._bfloat16_outputs = (
            set(filter(None, model.metadata.get(key, "").split(","))) for key in (BFLOAT16_INPUTS, BFLOAT16_OUTPUTS))
        self.input_names = [name for name in model.inputs if name not in model.initializers]
        self.output_names = list(model.outputs)
        self._session: Any = None
        self._lock = threading.Lock()

    def session(self) -> Any:
        """ONNX Runtime's session of the model, made at the first call of this or :meth:`run` and kept.

        Raises:
            ArtifactError: ONNX Runtime cannot open the model (naming its file).
        """
        with self._lock:
            if self._session is None:
                with _onnx_runtime_errors(self.function, opening=self._path):
                    self._session = ort.InferenceSession(self._path, self._options, providers=self._providers)
            return self._session

    def run(self, args: Sequence[Any]) -> list[np.ndarray]:
        """The model's outputs for ``args`` (one array per graph input, in order; the front checked them).

        Raises:
            ArtifactError: at the first call, ONNX Runtime cannot open the model (naming its file).
            ArtifactCallError: ONNX Runtime failed to run it (its message kept).
        """
        # np.asarray, not np.ascontiguousarray: that makes a scalar an array of one element (rank 1)
        feeds = {n: np.asarray(a, dtype=np.float32 if n in self._bfloat16_inputs else None, order="C")
                 for n, a in zip(self.input_names, args)}
        session = self.session()
        with _onnx_runtime_errors(self.function):
            results = session.run(self.output_names, feeds)
        if not self._bfloat16_outputs:
            return [np.asarray(r) for r in results]
        import ml_dtypes  # here: a model without bfloat16 ports never loads it

        return [np.asarray(r).astype(ml_dtypes.bfloat16) if n in self._bfloat16_outputs else np.asarray(r)
                for n, r in zip(self.output_names, results)]


#: The options of :func:`load` (``jaxport.load_converted(path, **options)``), as :class:`OnnxRuntimeModel` takes them.
LOAD_OPTIONS = ("threads", "inter_op_threads", "optimization", "providers", "spinning")


def load(root: str, manifest: ConvertedManifest, options: Mapping[str, Any]) -> OnnxTargetRuntime:
    """The runtime of an ONNX directory whose files were checked (the registry's runtime loader).

    Options: ``threads`` (default :func:`machine_threads`), ``inter_op_threads``,
    ``optimization`` (one of :data:`OPTIMIZATION_LEVELS`, default ``"all"``),
    ``providers`` (ONNX Runtime's execution providers, default the CPU's),
    ``spinning`` (default False).

    Raises:
        UsageError: an unknown option or a bad value.
        ArtifactError: a model is not valid ONNX, reads external data from a
            file the manifest does not list, or its inputs or outputs are not
            the manifest's.
    """
    unknown = sorted(set(options) - set(LOAD_OPTIONS))
    if unknown:
        raise UsageError(f"ONNX Runtime's options are {list(LOAD_OPTIONS)}, not {unknown}")
    return OnnxTargetRuntime(root, manifest, dict(options))


class OnnxTargetRuntime:
    """The functions of one converted ONNX directory: every model checked at load, run in a session
    made on its first call.

    Args:
        root: the directory (its files checked against ``manifest`` by the loader).
        manifest: its manifest; the files its models may read are those it lists.
        options: :class:`OnnxRuntimeModel`'s session options.

    Raises:
        UsageError, ArtifactError: as :func:`load`.
    """

    def __init__(self, root: str, manifest: ConvertedManifest, options: Mapping[str, Any]) -> None:
        allowed = frozenset(manifest.files)
        self._models: dict[str, OnnxRuntimeModel] = {}
        for function in manifest.functions:
            names = (list(function.signature.input_names), list(function.signature.output_names))
            for variant in function.variants:
                model = OnnxRuntimeModel(os.path.join(root, variant.file), allowed=allowed,
                                         function=function.name, **options)
                if (model.input_names, model.output_names) != names:
                    raise ArtifactError(f"{variant.file} takes {model.input_names} and returns "
                                        f"{model.output_names}, not the manifest's {names[0]} and {names[1]}")
                self._models[variant.file] = model

    def run(self, function: str, variant: Variant, args: Sequence[Any]) -> list[Any]:
        """The flat results of ``variant`` of ``function`` for the caller's flat arrays.

        Raises:
            ArtifactError: at the variant's first call, ONNX Runtime cannot open its model.
            ArtifactCallError: ONNX Runtime failed to run it.
        """
        return self._models[variant.file].run(args)

    def session(self, file: str) -> Any:
        """ONNX Runtime's session of the model ``file`` (a variant's), the one its calls run in: a
        generator's steps share it, so a directory served and generating from is opened once.

        Raises:
            ArtifactError: ONNX Runtime cannot open the model.
        """
        return self._models[file].session()


def activation_ranges(model: bytes, names: Sequence[str], feeds: Sequence[Mapping[str, np.ndarray]],
                      function: str = "") -> dict[str, tuple[float, float]]:
    """The smallest and largest value that each of the values ``names`` of ``model`` (a self-contained
    model, its weights inside, every one of ``names`` among its outputs) takes over the examples
    ``feeds`` (a static quantization's calibration).

    Raises:
        ArtifactCallError: ONNX Runtime refused the model or an example.
    """
    ranges: dict[str, tuple[float, float]] = {}
    with _onnx_runtime_errors(function):
        session = ort.InferenceSession(model, session_options(threads=None, optimization="basic"),
                                       providers=["CPUExecutionProvider"])
        for feed in feeds:
            for name, value in zip(names, session.run(list(names), dict(feed))):
                low, high = float(np.min(value)), float(np.max(value))
                old = ranges.get(name, (low, high))
                ranges[name] = (min(old[0], low), max(old[1], high))
    return ranges


def reference_session(model: bytes, function: str = "") -> Callable[[Mapping[str, np.ndarray]], list[np.ndarray]]:
    """A self-contained ``model`` opened by ONNX Runtime (basic optimizations), as a function from its
    feeds to all its outputs (a quantization's measure of its weights' contributions).

    Raises:
        ArtifactCallError: ONNX Runtime refused the model (or, when called, an example).
    """
    with _onnx_runtime_errors(function):
        session = ort.InferenceSession(model, session_options(threads=None, optimization="basic"),
                                       providers=["CPUExecutionProvider"])

    def run(feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        with _onnx_runtime_errors(function):
            return [np.asarray(o) for o in session.run(None, dict(feeds))]
    return run
