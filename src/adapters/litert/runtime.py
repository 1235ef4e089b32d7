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
shapes, dtypes and constraints are jaxport's front's to check, before a
call reaches this module.

XNNPACK: LiteRT applies its XNNPACK delegate by default, which picks kernels
by the CPU's instruction set; ``xnnpack=False`` runs LiteRT's builtin
kernels alone. Results agree to the tolerance of
:data:`jaxport.domain.targets.litert.FLOAT32_TOLERANCE` either way.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from jaxport.domain.converted.manifest import ConvertedManifest, Variant
from jaxport.domain.errors import MissingExtraError

try:
    from ai_edge_litert import interpreter as litert
except ImportError as exc:  # the extra is not installed
    raise MissingExtraError("LiteRT's runtime (ai-edge-litert)", "litert-runtime", exc) from exc


class LiteRtLoadError(RuntimeError):
    """LiteRT's interpreter cannot open a model or prepare its operators (a kernel it lacks, for one)."""


def runtime_version() -> str:
    """The version of ``ai-edge-litert``."""
    from importlib.metadata import version

    return version("ai-edge-litert")


class LiteRtModel:
    """One ``.tflite`` model, opened in LiteRT's interpreter, its tensors allocated.

    Args:
        source: the model file's path, or its bytes.
        xnnpack: whether LiteRT may apply its default XNNPACK delegate.
        num_threads: the interpreter's threads (None: LiteRT's default).

    Raises:
        LiteRtLoadError: LiteRT refused the model (the message keeps its text, which
            names an operator without a kernel, such as ``STABLEHLO_SORT``).
    """

    def __init__(self, source: str | os.PathLike[str] | bytes, *, xnnpack: bool = True,
                 num_threads: int | None = None) -> None:
        resolver = litert.OpResolverType.AUTO if xnnpack else litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        where: dict[str, Any] = ({"model_content": bytes(source)} if isinstance(source, (bytes, bytearray))
                                 else {"model_path": os.fspath(source)})
        try:
            self._interpreter = litert.Interpreter(**where, num_threads=num_threads,
                                                   experimental_op_resolver_type=resolver)
            self._interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as exc:
            raise LiteRtLoadError(f"LiteRT cannot open the model: {' '.join(str(exc).split())}") from exc

    @property
    def signatures(self) -> dict[str, dict[str, list[str]]]:
        """Each signature's key and its input and output names."""
        found: dict[str, dict[str, list[str]]] = self._interpreter.get_signature_list()
        return found

    def function(self, key: str, input_names: Sequence[str], output_names: Sequence[str]) -> LiteRtFunction:
        """The signature ``key``, called with flat arrays in the order of ``input_names``.

        Raises:
            KeyError: the model has no such signature, or names other inputs or outputs.
        """
        listed = self.signatures.get(key)
        if listed is None:
            raise KeyError(f"The LiteRT model has no signature {key!r}; it has {sorted(self.signatures)}")
        if sorted(listed["inputs"]) != sorted(input_names) or sorted(listed["outputs"]) != sorted(output_names):
            raise KeyError(f"The LiteRT signature {key!r} takes {listed['inputs']} and returns "
                           f"{listed['outputs']}, not {list(input_names)} and {list(output_names)}")
        return LiteRtFunction(self._interpreter.get_signature_runner(key), tuple(input_names), tuple(output_names))


class LiteRtFunction:
    """One signature of a LiteRT model, called on flat arrays; calls from several threads take turns
    (LiteRT's interpreter holds one set of tensors)."""

    def __init__(self, runner: Any, input_names: tuple[str, ...], output_names: tuple[str, ...]) -> None:
        self._runner = runner
        self._inputs = input_names
        self._outputs = output_names
        self._lock = threading.Lock()

    def __call__(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The flat results of the signature on the flat ``args`` (checked by jaxport's front).

        Raises:
            RuntimeError: LiteRT failed while running (the message keeps its text).
        """
        if len(args) != len(self._inputs):
            raise ValueError(f"{len(self._inputs)} flat arguments expected, {len(args)} given")
        given = {name: np.ascontiguousarray(a) for name, a in zip(self._inputs, args)}
        try:
            with self._lock:
                results = self._runner(**given)
        except (ValueError, RuntimeError) as exc:
            raise RuntimeError(f"LiteRT failed to run the model: {' '.join(str(exc).split())}") from exc
        return [np.asarray(results[name]) for name in self._outputs]


class LiteRtRuntime:
    """The LiteRT target's runtime: a converted directory's models, each opened on its first call.

    Satisfies :class:`~jaxport.domain.targets.ports.TargetRuntime`: the front has
    checked every call and chosen the variant; this runs it.
    """

    def __init__(self, root: str | os.PathLike[str], manifest: ConvertedManifest, *, xnnpack: bool = True,
                 num_threads: int | None = None) -> None:
        self._root = os.fspath(root)
        self._manifest = manifest
        self._xnnpack = xnnpack
        self._num_threads = num_threads
        self._functions: dict[str, LiteRtFunction] = {}
        self._lock = threading.Lock()

    def run(self, function: str, variant: Variant, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The flat results of ``variant`` of ``function`` for the caller's flat ``args``."""
        with self._lock:
            run = self._functions.get(variant.file)
            if run is None:
                signature = self._manifest.function(function).signature
                model = LiteRtModel(os.path.join(self._root, variant.file), xnnpack=self._xnnpack,
                                    num_threads=self._num_threads)
                run = self._functions[variant.file] = model.function(function, signature.input_names,
                                                                     signature.output_names)
        return run(args)


def load(root: str, manifest: ConvertedManifest, options: Mapping[str, Any]) -> LiteRtRuntime:
    """The runtime of the LiteRT directory ``root``, whose files matched ``manifest`` (the registry's loader).

    Each model is opened (memory-mapped by LiteRT) on its first call.

    Options: ``xnnpack`` (bool, default True: LiteRT's XNNPACK delegate, which
    keeps a packed copy of the weights; False: LiteRT's builtin kernels, less
    memory and slower) and ``num_threads`` (int; LiteRT's default otherwise).

    Raises:
        ValueError: an unknown option, or a value of the wrong type.
    """
    unknown = sorted(set(options) - {"xnnpack", "num_threads"})
    if unknown:
        raise ValueError(f"LiteRT's runtime takes the options 'xnnpack' and 'num_threads' only, not {unknown}")
    xnnpack, threads = options.get("xnnpack", True), options.get("num_threads")
    if not isinstance(xnnpack, bool):
        raise ValueError(f"xnnpack={xnnpack!r} is not a bool")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool) or threads < 1):
        raise ValueError(f"num_threads={threads!r} is not a positive int")
    return LiteRtRuntime(root, manifest, xnnpack=xnnpack, num_threads=threads)
