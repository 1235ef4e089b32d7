"""Converting and loading the directories jaxport wrote: :func:`convert`, :func:`load_converted`,
:func:`load_iree`, :func:`verify_converted`, and for serving, the engines and the numerics check
:func:`open_directory` and :func:`load_model`.

Each runs the process's one service, built on first use in the composition root: the
:class:`~jaxport.application.conversion.pipeline.ConversionPipeline`
(:func:`jaxport.application.wiring.conversion_pipeline`) or the
:class:`~jaxport.application.conversion.loader.ConvertedLoader`
(:func:`jaxport.application.wiring.converted_loader`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxport.application import wiring
from jaxport.application.conversion.model import ConvertedModel
from jaxport.application.conversion.verify_directory import DirectoryVerification
from jaxport.domain.errors import ArtifactError
from jaxport.domain.path_kind import PathKind

if TYPE_CHECKING:
    # Types only: loading imports neither the pipeline nor JAX (tests/e2e/test_converted_load_imports.py).
    from jaxport.adapters.jax.exported.exported import Exported
    from jaxport.adapters.jax.bundles.loaded import Bundle
    from jaxport.application.conversion.pipeline import Dims
    from jaxport.application.conversion.quantized import Calibration
    from jaxport.application.conversion.source import ConversionSource
    from jaxport.domain.converted.manifest import ConvertedManifest
    from jaxport.domain.opened_directory import OpenedDirectory
    from jaxport.domain.targets.registry import TargetEntry


def convert(source: Exported | Bundle | str | os.PathLike[str], path: str | os.PathLike[str], *, to: str,
            options: object | None = None, dims: Dims | None = None,
            calibration: Calibration | None = None, overwrite: bool = False) -> ConvertedManifest:
    """Converts every function of ``source`` for the runtime target ``to`` into the directory ``path``.

    Args:
        source: an :class:`~jaxport.Exported` (one function, named after the
            exported function), a :class:`~jaxport.Bundle`, or the path of an
            artifact file or a bundle directory (by jaxport or ``jax.export``).
        path: the directory to write.
        to: the target's name: ``"savedmodel"``, ``"iree"`` (``jaxport.TARGETS`` lists them).
        options: the target's options (:class:`~jaxport.SavedModelOptions`,
            :class:`~jaxport.IreeOptions`); None: the defaults.
        dims: for a target that compiles static shapes (IREE), the bindings
            of each symbolic function's dimension variables to compile for:
            ``{"predict": [{"b": 1}, {"b": 8}]}``.
        calibration: for a quantization calibrated on examples (``quantize="int8"``),
            function name -> a sequence of ``(args, kwargs)`` examples; None: the
            source's golden examples.
        overwrite: replace what is at ``path`` (else it must not exist).

    Returns:
        The manifest written.

    Raises:
        ConversionError: what the target cannot run, a symbolic function
            without dims, a binding that violates its constraints; the message
            names the function, the argument and the reason. Raised before
            anything is written.
        ArtifactError: a source file is not a valid artifact or bundle, or a
            module fails verification.
        MissingExtraError: the target's extra is not installed.
        FileExistsError: ``path`` exists and ``overwrite`` is False.
        TypeError: ``options`` are another target's.
        UsageError: ``to`` names no target.
    """
    return wiring.conversion_pipeline().convert(source, path, to=to, options=options, dims=dims,
                                                calibration=calibration, overwrite=overwrite)


def write_converted(src: ConversionSource, out: Path, entry: TargetEntry, options: object,
                    dims: Dims | None) -> ConvertedManifest:
    """:func:`convert` of what :func:`~jaxport.application.conversion.source.read_source` read (``out``
    replaceable), for ``check_numerics``, on the process's pipeline."""
    return wiring.conversion_pipeline().write(src, out, entry, options, dims)


def load_converted(path: str | os.PathLike[str], *, verify: bool = True, **runtime_options: Any) -> ConvertedModel:
    """The functions of the directory that :func:`jaxport.convert` wrote at ``path``, for any target.

    Before the runtime reads anything, the directory is checked against its
    manifest (exactly its files, each of the recorded size and SHA-256
    digest) and its target against this machine. Compiled code (a
    ``.vmfb``) is native code: load only directories you trust; the digests
    detect damage, not malice.

    Args:
        path: the directory.
        runtime_options: the runtime's own options (IREE: ``driver="local-sync"``).

    Raises:
        ArtifactError: the manifest is missing, damaged or of another format,
            or a file is missing, extra, truncated or changed, or the runtime
            cannot open it or finds in it another signature, or it failed
            verification (the message names the directory, the file and why).
        TargetMismatchError, PlatformMismatchError: the directory cannot run on this machine.
        MissingExtraError: the target's runtime is not installed (the message names the extra).
        UsageError: an unknown runtime option, or a bad value.
        OSError: ``path`` is not a readable directory.
    """
    return wiring.converted_loader().load(path, verify=verify, **runtime_options)


def verify_converted(path: str | os.PathLike[str] | OpenedDirectory[ConvertedManifest],
                     **runtime_options: Any) -> DirectoryVerification:
    """What verifying the directory at ``path`` finds (``jaxport check DIR``), its runtime not opened here.

    Raises:
        As :func:`load_converted`, but a directory that fails verification gives ``ok=False``.
    """
    return wiring.converted_loader().verify(path, **runtime_options)


def load_iree(path: str | os.PathLike[str], *, driver: str = "local-task", verify: bool = True) -> ConvertedModel:
    """``load_converted(path, driver=driver, verify=verify)`` for a directory that :func:`jaxport.to_iree` wrote.

    ``driver``: IREE's CPU driver: ``"local-task"`` runs a call's work on a
    pool of threads, one per core; ``"local-sync"`` on the calling thread.

    Raises:
        As :func:`load_converted`; ``ArtifactError`` when the directory is another target's.
    """
    loader = wiring.converted_loader()
    directory = loader.open(path, PathKind.CONVERTED)
    if directory.manifest.target != "iree":
        raise ArtifactError(f"{path} is a {directory.manifest.target} directory, not IREE's: use "
                            "jaxport.load_converted")
    return loader.load(directory, driver=driver, verify=verify)


def open_directory(path: str | os.PathLike[str]) -> OpenedDirectory[Any]:
    """The bundle or converted directory at ``path``, opened once: its manifest parsed, its listing checked.

    Raises:
        ArtifactError: ``path`` is neither (the message says what it is), or its manifest is damaged, or a
            file is missing, extra, truncated or longer than recorded.
    """
    return wiring.converted_loader().open(path)


def load_model(directory: OpenedDirectory[Any], **runtime_options: Any) -> ConvertedModel:
    """The functions of ``directory`` (:func:`open_directory`) behind the call front: a bundle's on JAX, its
    weights bound; a converted directory's on its target's runtime (as :func:`load_converted`).

    Raises:
        As :func:`load_converted` and :func:`jaxport.load_bundle`.
    """
    return wiring.converted_loader().model(directory, **runtime_options)
