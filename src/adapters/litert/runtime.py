"""LiteRT's interpreter: runs a ``.tflite`` model's signature on flat NumPy arrays.

The only module that runs LiteRT models (``ai_edge_litert``, the
``ai-edge-litert`` package of the ``jaxport[litert-runtime]`` and
``jaxport[litert]`` extras: NumPy, flatbuffers and protobuf, no JAX, no
TensorFlow). A model is opened from its file (memory-mapped by LiteRT) or
its bytes; each function is one of its signatures, called with the caller's
flat arrays in the order of the wire names it was converted with, and
answering its flat results in theirs. A dynamic dimension (``-1`` in the
model's shape signature) takes the size of the array given: the signature
runner resizes its inputs and allocates its tensors on every call. The
argument count, shapes, dtypes and constraints are jaxport's front's to
check, before a call reaches this module.

Loading opens every model of the directory and checks its signature
against the manifest (what the front cannot know); LiteRT allocates a
model's tensors, and XNNPACK packs its weights, at its first call. LiteRT's
errors become jaxport's here, in :func:`_litert_errors`: ``ArtifactError``
(:class:`LiteRtLoadError`, naming the file) when a model cannot be opened or
prepared, at load or at its first call, ``ArtifactCallError`` when a call
fails; a bad option is a ``UsageError``.

XNNPACK: LiteRT applies its XNNPACK delegate by default, which picks kernels
by the CPU's instruction set; ``xnnpack=False`` runs LiteRT's builtin
kernels alone. Results agree to the tolerance of
:data:`jaxport.domain.targets.litert.FLOAT32_TOLERANCE` either way.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from jaxport.domain.converted.manifest import ConvertedManifest, Variant
from jaxport.domain.converted.static_shapes import variant_file
from jaxport.domain.errors import ArtifactError, MissingExtraError, UsageError
from jaxport.domain.targets.litert import shared_signatures, signature_key
from jaxport.adapters.engine_errors import engine_errors
from jaxport.adapters.runtime_logs import native_info_silenced

try:
    from ai_edge_litert import interpreter as litert
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("LiteRT's runtime (ai-edge-litert)", "litert-runtime", exc) from exc


#: What LiteRT writes to stderr as it opens a model and creates its environment (at a model's first use):
#: its INFO lines, and the vendors' NPU plugins it finds without their libraries (``Could not load shared
#: library ... libopenvino.so``): jaxport runs LiteRT on the CPU.
NOISE = (b"INFO: ", b"NPU accelerator could not be loaded", b"Failed to load plugin at:",
         b"Could not load shared library")


class LiteRtLoadError(ArtifactError, presents_as=ArtifactError):
    """LiteRT's interpreter cannot open a model or prepare its operators (a kernel it lacks, for one).

    An :class:`~jaxport.errors.ArtifactError` (it prints and pickles as one); the converter
    catches it by this name to refuse a model that LiteRT cannot run.
    """


def _litert_errors(function: str | None = None, *, model: str = "") -> AbstractContextManager[None]:
    """LiteRT's errors (``ValueError``, ``RuntimeError``, whatever its bindings raise) as jaxport's,
    LiteRT's words kept (:func:`~jaxport.adapters.engine_errors.engine_errors`).

    Args:
        function: the function being called; None while a model is opened or prepared.
        model: the model's file, for the message (``""``: a model given as bytes).

    Raises:
        LiteRtLoadError: opening or preparing the model failed.
        ArtifactCallError: calling ``function`` failed.
    """
    where = f"the model {model}" if model else "the model"
    return engine_errors(function, lambda exc: LiteRtLoadError(
        f"LiteRT cannot open {where}: {type(exc).__name__}: {' '.join(str(exc).split())}"))


class LiteRtModel:
    """One ``.tflite`` model, opened in LiteRT's interpreter.

    Args:
        source: the model file's path, or its bytes.
        xnnpack: whether LiteRT may apply its default XNNPACK delegate.
        num_threads: the interpreter's threads (None: LiteRT's default).
        prepare: whether to allocate its tensors now (LiteRT prepares every
            operator, and applies XNNPACK, then); otherwise at the first call
            of one of its functions.

    Raises:
        LiteRtLoadError: LiteRT refused the model (the message keeps its text, which
            names an operator without a kernel, such as ``STABLEHLO_SORT``).
    """

    def __init__(self, source: str | os.PathLike[str] | bytes, *, xnnpack: bool = True,
                 num_threads: int | None = None, prepare: bool = True) -> None:
        resolver = litert.OpResolverType.AUTO if xnnpack else litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        where: dict[str, Any] = ({"model_content": bytes(source)} if isinstance(source, (bytes, bytearray))
                                 else {"model_path": os.fspath(source)})
        self._file = str(where.get("model_path", ""))
        with _litert_errors(model=self._file), native_info_silenced(NOISE):
            self._interpreter = litert.Interpreter(**where, num_threads=num_threads,
                                                   experimental_op_resolver_type=resolver)
        self._prepared = False
        self._lock = threading.Lock()
        #: Held while one of its signatures runs: they share the interpreter.
        self.call_lock = threading.Lock()
        if prepare:
            self.prepare()

    def prepare(self) -> None:
        """Allocates the model's tensors once (LiteRT's default delegate is applied then).

        Raises:
            LiteRtLoadError: LiteRT cannot prepare an operator.
        """
        with self._lock:
            if not self._prepared:
                with _litert_errors(model=self._file), native_info_silenced(NOISE):  # the delegate says so
                    self._interpreter.allocate_tensors()
                self._prepared = True

    def runner(self, key: str) -> Any:
        """LiteRT's runner of the signature ``key``, the model prepared first.

        Raises:
            LiteRtLoadError: LiteRT cannot prepare the model.
        """
        self.prepare()
        with _litert_errors(model=self._file):
            return self._interpreter.get_signature_runner(key)

    @property
    def signatures(self) -> dict[str, dict[str, list[str]]]:
        """Each signature's key and its input and output names.

        Raises:
            LiteRtLoadError: LiteRT cannot read them.
        """
        with _litert_errors(model=self._file):
            found: dict[str, dict[str, list[str]]] = self._interpreter.get_signature_list()
        return found

    def function(self, key: str, input_names: Sequence[str], output_names: Sequence[str]) -> LiteRtFunction:
        """The signature ``key``, called with flat arrays in the order of ``input_names``.

        Raises:
            ArtifactError: the model has no such signature, or names other inputs or outputs.
        """
        listed = self.signatures.get(key)
        if listed is None:
            raise ArtifactError(f"The LiteRT model has no signature {key!r}; it has {sorted(self.signatures)}")
        if sorted(listed["inputs"]) != sorted(input_names) or sorted(listed["outputs"]) != sorted(output_names):
            raise ArtifactError(f"The LiteRT signature {key!r} takes {listed['inputs']} and returns "
                                f"{listed['outputs']}, not {list(input_names)} and {list(output_names)}")
        return LiteRtFunction(self, key, tuple(input_names), tuple(output_names))


class LiteRtFunction:
    """One signature of a LiteRT model, called on flat arrays; calls from several threads take turns
    (LiteRT's interpreter holds one set of tensors)."""

    def __init__(self, model: LiteRtModel, key: str, input_names: tuple[str, ...],
                 output_names: tuple[str, ...]) -> None:
        self._model = model
        self._key = key
        self._runner: Any = None
        self._inputs = input_names
        self._outputs = output_names
        self._lock = model.call_lock

    def __call__(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The flat results of the signature on the flat ``args`` (one per input name; jaxport's front
        checked their count, shapes and dtypes against the signature that loading matched to this model).

        Raises:
            LiteRtLoadError: at the first call, LiteRT cannot prepare the model (naming its file).
            ArtifactCallError: LiteRT failed while running (the message keeps its text).
        """
        # np.asarray, not np.ascontiguousarray: that makes a scalar an array of one element (rank 1)
        given = {name: np.asarray(a, order="C") for name, a in zip(self._inputs, args)}
        with self._lock:
            if self._runner is None:
                self._runner = self._model.runner(self._key)
            with _litert_errors(self._key):
                results = self._runner(**given)
                return [np.asarray(results[name]) for name in self._outputs]


class LiteRtRuntime:
    """The LiteRT target's runtime: a converted directory's models, each opened and checked at load.

    Satisfies :class:`~jaxport.domain.targets.ports.TargetRuntime`: the front has
    checked every call and chosen the variant; this runs it.

    Raises:
        ArtifactError: a model cannot be opened, or its signature is not the manifest's.
    """

    def __init__(self, root: str | os.PathLike[str], manifest: ConvertedManifest, *, xnnpack: bool = True,
                 num_threads: int | None = None) -> None:
        self._functions: dict[tuple[str, Variant], LiteRtFunction] = {}
        models: dict[str, LiteRtModel] = {}  # one interpreter per file: a shared file's signatures share it
        shared = shared_signatures(manifest.target_details) is not None
        for function in manifest.functions:
            signature = function.signature
            for variant in function.variants:
                stem = variant_file(function.name, variant.binding, "")
                key = signature_key(function.name, stem, len(function.variants)) if shared else function.name
                try:
                    if variant.file not in models:
                        models[variant.file] = LiteRtModel(os.path.join(os.fspath(root), variant.file),
                                                           xnnpack=xnnpack, num_threads=num_threads, prepare=False)
                    self._functions[function.name, variant] = models[variant.file].function(
                        key, signature.input_names, signature.output_names)
                except ArtifactError as exc:
                    raise ArtifactError(f"{variant.file}: {exc}") from exc

    def run(self, function: str, variant: Variant, args: Sequence[Any]) -> list[Any]:
        """The flat results of ``variant`` of ``function`` for the caller's flat ``args``."""
        return self._functions[function, variant](args)


def load(root: str, manifest: ConvertedManifest, options: Mapping[str, Any]) -> LiteRtRuntime:
    """The runtime of the LiteRT directory ``root``, whose files matched ``manifest`` (the registry's loader).

    Each model is opened (memory-mapped by LiteRT) and its signature checked
    here; its tensors are allocated at its first call.

    Options: ``xnnpack`` (bool, default True: LiteRT's XNNPACK delegate, which
    keeps a packed copy of the weights; False: LiteRT's builtin kernels, less
    memory and slower) and ``num_threads`` (int; LiteRT's default otherwise).

    Raises:
        UsageError: an unknown option, or a value of the wrong type.
        ArtifactError: a model cannot be opened, or its signature is not the manifest's.
    """
    unknown = sorted(set(options) - {"xnnpack", "num_threads"})
    if unknown:
        raise UsageError(f"LiteRT's runtime takes the options 'xnnpack' and 'num_threads' only, not {unknown}")
    xnnpack, threads = options.get("xnnpack", True), options.get("num_threads")
    if not isinstance(xnnpack, bool):
        raise UsageError(f"xnnpack={xnnpack!r} is not a bool")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        raise UsageError(f"num_threads={threads!r} is not a positive int")
    return LiteRtRuntime(root, manifest, xnnpack=xnnpack, num_threads=threads)
