"""What a converter reads: the functions and weights of an ``Exported``, a ``Bundle``, or their files.

A converter takes an :class:`~jaxport.Exported`, a :class:`~jaxport.Bundle`,
or the path of an artifact file or a bundle directory (written by jaxport or
``jax.export``). Files are read with jaxport's own JAX-free readers, every
digest checked first: a bundle's files against its manifest, its weights
header and each weight against theirs. The weights are handed on as a
writer of the bundle's ``params.safetensors`` (the file itself, for a
directory), so that a converted directory keeps them as they were saved; a
bundle directory's golden examples are handed on as their file's bytes (an
in-process bundle has none at hand).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from jaxport.adapters.storage.atomic_files import write_all
from jaxport.adapters.storage.atomic_directory import sha256_many
from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.adapters.storage.safetensors_file import encode_header, raw_bytes, write_weights
from jaxport.domain.artifact.record import ArtifactRecord, TreeSpec
from jaxport.domain.bundle.manifest import EXAMPLES_FILE, FORMAT_NAME, WEIGHTS_FILE, Example, Manifest, WeightRecord
from jaxport.domain.generation.spec import GenerationSpec
from jaxport.domain.errors import ArtifactError
from jaxport.domain.opened_directory import Directories, OpenedDirectory
from jaxport.domain.path_kind import PathKind

if TYPE_CHECKING:
    from jaxport.adapters.jax.bundles.loaded import Bundle
    from jaxport.adapters.jax.exported.exported import Exported


@dataclass(frozen=True, slots=True)
class SourceFunction:
    """One function to convert: its name, its record, whether its first argument is the weights."""

    name: str
    record: ArtifactRecord
    takes_params: bool = False


@dataclass(frozen=True)
class ConversionSource:
    """The functions and the weights of what is converted.

    Attributes:
        functions: in the source's order.
        params_tree: the weights' pytree structure (None without weights).
        weights: the weights' table, per leaf in flattening order.
        write_weights: writes the weights' safetensors file (None without weights).
        weights_header: that file's header (its first bytes, up to the data).
        examples: the golden examples of a bundle directory.
        examples_blob: their ``examples.safetensors``, its digest checked.
        weights_file: the path of a bundle directory's weights file (checked), ``""`` otherwise.
        generation: a generative bundle's spec (carried into the converted directory's manifest).
        tokenizer_blob: its bundled tokenizer's file (checked), ``b""`` without one.
    """

    functions: tuple[SourceFunction, ...]
    params_tree: TreeSpec | None = None
    weights: tuple[WeightRecord, ...] = ()
    write_weights: Callable[[BinaryIO], object] | None = None
    weights_header: bytes = b""
    examples: tuple[Example, ...] = ()
    examples_blob: bytes = b""
    weights_file: str = ""
    generation: GenerationSpec | None = None
    tokenizer_blob: bytes = b""

    @property
    def weights_header_sha256(self) -> str:
        """The SHA-256 (hex) of the weights file's header."""
        return hashlib.sha256(self.weights_header).hexdigest()


def read_source(source: Exported | Bundle | str | os.PathLike[str], directories: Directories) -> ConversionSource:
    """The functions and weights of ``source`` (a bundle's directory opened by ``directories``).

    Raises:
        ArtifactError: a file is not a valid artifact or bundle, or was changed
            after it was written (the message names it).
        TypeError: ``source`` is none of the accepted kinds.
        OSError: a file cannot be read.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        return bundle_source(directories.open(path, PathKind.BUNDLE)) if path.is_dir() else _artifact_file(path)
    from jaxport.adapters.jax.bundles.loaded import Bundle  # JAX's types: a path converts without JAX
    from jaxport.adapters.jax.exported.exported import Exported

    if isinstance(source, Exported):
        return ConversionSource((SourceFunction(source.fun_name, source.record),))
    if isinstance(source, Bundle):
        return _bundle(source)
    raise TypeError(f"Cannot convert a {type(source).__name__}: give a jaxport.Exported, a "
                    "jaxport.Bundle, or the path of an artifact file or a bundle directory")


def _artifact_file(path: Path) -> ConversionSource:
    with open(path, "rb") as file:
        blob = file.read()
    try:
        record = decode_artifact(blob)
    except ArtifactError as exc:
        raise ArtifactError(f"{path} is not a valid artifact: {exc}") from exc
    return ConversionSource((SourceFunction(record.function_name, record),))


def bundle_source(directory: OpenedDirectory[Manifest]) -> ConversionSource:
    """The functions and weights of the bundle ``directory``, opened already (raises as :func:`read_source`)."""
    manifest = directory.manifest
    functions = []
    for entry in manifest.functions:
        try:
            record = decode_artifact(directory.read(entry.file))
        except ArtifactError as exc:
            raise ArtifactError(f"{Path(directory.root, entry.file)}: {exc}") from exc
        functions.append(SourceFunction(entry.name, record, entry.takes_params))
    weights = directory.weights()
    assert weights is not None  # a bundle always has its weights file
    examples = directory.read(EXAMPLES_FILE) if manifest.examples else b""
    spec = manifest.generation
    tokenizer = directory.read(spec.tokenizer) if spec is not None and spec.tokenizer else b""
    return ConversionSource(tuple(functions), manifest.params_tree, manifest.weights,
                            partial(write_all, data=weights.buffer), bytes(weights.header), manifest.examples,
                            examples, str(Path(directory.root, WEIGHTS_FILE)), spec, tokenizer)


def _bundle(bundle: Bundle) -> ConversionSource:
    # JAX's side of a bundle: a bundle or artifact directory converts without JAX (tests/e2e/test_conversion_imports.py)
    from jaxport.adapters.jax.bundles.weights import flatten_params, stored_weight

    manifest = bundle.manifest
    functions = tuple(SourceFunction(e.name, bundle.functions[e.name].record, e.takes_params)
                      for e in manifest.functions)
    _, names, leaves = flatten_params(bundle.params)
    data = [raw_bytes(host) for _, host in (stored_weight(n, leaf) for n, leaf in zip(names, leaves))]
    # The weights may be other than the bundle's saved ones (Bundle.with_params): digest these.
    weights = tuple(dataclasses.replace(w, sha256=d) for w, d in zip(manifest.weights, sha256_many(data)))
    header, order = encode_header(weights, {"format": FORMAT_NAME})
    write = partial(write_weights, header=header, order=order, data=data)
    # A loaded bundle no longer has its tokenizer's file: its spec goes without one.
    spec = None if manifest.generation is None else dataclasses.replace(manifest.generation, tokenizer=None)
    return ConversionSource(functions, manifest.params_tree, weights, write, header, generation=spec)
