"""The one reader of the directories jaxport writes: a bundle or a converted directory, opened once.

:class:`DiskDirectories` implements :class:`~jaxport.domain.opened_directory.Directories`:
it says what the path is (:mod:`.path_kind`, the manifests read once), parses
the manifest once and checks the listing against it (:mod:`.checked_directory`);
the :class:`DiskDirectory` it gives then reads the files: each file jaxport
reads itself is checked at read, from the bytes it hands back; the weights
file by its header's digest and each weight's; the files a runtime opens by
path once, before it opens them. A file checked before and unchanged since
(:class:`~jaxport.domain.ports.KnownFiles`) is not hashed again.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from jaxport.domain.bundle.checks import check_files, check_weights_digests, check_weights_header
from jaxport.domain.bundle.manifest import EXAMPLES_FILE, MANIFEST_FILE, WEIGHTS_FILE, Manifest, WeightRecord
from jaxport.domain.checked_directory import check_digest, check_listing, manifest_format
from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.errors import ArtifactError, UsageError
from jaxport.domain.path_kind import CONVERTED_FORMATS, PathKind, directory_kind, require
from jaxport.domain.ports import KnownFiles
from jaxport.domain.targets.registry import TARGETS, target
from .atomic_directory import sha256_many
from .checked_directory import check_digests, listing
from .path_kind import manifests, path_kind

if TYPE_CHECKING:
    from .safetensors_file import SafetensorsFile

_M = TypeVar("_M", Manifest, ConvertedManifest)


@dataclass(frozen=True, slots=True)
class DiskDirectories:
    """Opens directories on this machine's file system (:class:`~jaxport.domain.opened_directory.Directories`).

    Attributes:
        known: the files whose digests were checked before (None: every file is hashed).
    """

    known: KnownFiles | None = None

    def open(self, path: str | os.PathLike[str], *wanted: PathKind) -> DiskDirectory[Any]:
        """The directory at ``path``, opened (see :meth:`Directories.open
        <jaxport.domain.opened_directory.Directories.open>`)."""
        root = Path(path)
        found = manifests(root)
        formats = {place: manifest_format(data) for place, data in found.items()}
        kind = directory_kind(formats.values()) if root.is_dir() else path_kind(root)
        require(kind, root, *wanted)
        readers = [k for k in wanted if k in (PathKind.BUNDLE, PathKind.CONVERTED)]
        if kind not in wanted and len(readers) > 1:  # nothing there, or no manifest of either kind
            raise ArtifactError(f"{root} is not a bundle or a directory converted from one by jaxport: it is "
                                f"{kind.value}")
        if (kind if kind in readers else readers[0]) is PathKind.BUNDLE:  # else its reader says what is wrong
            sizes = listing(root)
            if sizes.get(MANIFEST_FILE, -1) < 0:
                raise ArtifactError(f"{root} is not a bundle: its file {MANIFEST_FILE} is missing")
            data = found.get(MANIFEST_FILE) or (root / MANIFEST_FILE).read_bytes()
            bundle = Manifest.from_json(data)
            check_files(bundle, sizes)
            return DiskDirectory(str(root), PathKind.BUNDLE, bundle, data, "bundle", self.known,
                                 (WEIGHTS_FILE, bundle.weights, bundle.weights_header_sha256))
        where = next((place for place, name in formats.items() if name in CONVERTED_FORMATS), None)
        if where is None:
            raise ArtifactError(f"{root} is not a directory that jaxport converted: it has no {MANIFEST_FILE} "
                                f"(nor {', '.join(e.manifest_path for e in TARGETS.values() if e.manifest_dir)})")
        manifest = ConvertedManifest.from_json(found[where])
        try:
            entry = target(manifest.target)
        except UsageError as exc:
            raise ArtifactError(f"{root}: {exc} (a newer jaxport wrote it?)") from None
        if entry.manifest_path != where:
            raise ArtifactError(f"{root}: a {entry.name} directory keeps its manifest at {entry.manifest_path}")
        check_listing(manifest.files, listing(root), where, "directory", folders=True)
        table = manifest.weights
        return DiskDirectory(str(root), PathKind.CONVERTED, manifest, found[where], "directory", self.known,
                             (table.file, table.leaves, table.header_sha256) if table else ("", (), ""))


@dataclass
class DiskDirectory(Generic[_M]):
    """A directory opened by :class:`DiskDirectories` (an :class:`~jaxport.domain.opened_directory.OpenedDirectory`).

    Attributes:
        root, kind, manifest, manifest_bytes: as the port says.
        owner: the directory in messages (``"bundle"``, ``"directory"``).
        known: the files checked before (None: every file is hashed).
        weights_table: the weights file (``""``: none), its weights' records and its header's digest.
    """

    root: str
    kind: PathKind
    manifest: _M
    manifest_bytes: bytes
    owner: str
    known: KnownFiles | None
    weights_table: tuple[str, Sequence[WeightRecord], str]
    _checked: bool = field(default=False, repr=False)
    _weights: SafetensorsFile | None = field(default=None, repr=False)

    @property
    def _own(self) -> set[str]:
        """The files that jaxport reads itself (:meth:`read`), not a runtime: the golden examples, the tokenizer."""
        examples = EXAMPLES_FILE if isinstance(self.manifest, Manifest) else self.manifest.examples_file
        generation = self.manifest.generation
        return {file for file in (examples, generation.tokenizer if generation is not None else None) if file}

    def read(self, file: str) -> bytes:
        """The bytes of ``file``, their digest checked (raises ``ArtifactError`` naming the file: one the
        manifest does not list is not opened, nor one that cannot be read)."""
        if file not in self.manifest.files:
            raise ArtifactError(f"{self.owner}: the manifest lists no file {file!r}: it is not read")
        try:
            blob = Path(self.root, file).read_bytes()
        except OSError as exc:
            raise ArtifactError(f"{self.owner}: the file {file!r} cannot be read: {exc.strerror or exc}") from exc
        check_digest(file, self.manifest.files[file], hashlib.sha256(blob).hexdigest(), self.owner)
        return blob

    def opened_by_path(self) -> str:
        """The root, every file but the manifest and those jaxport reads itself checked (once: each file
        streamed, the weights as :meth:`weights` does, a file checked before and unchanged since not hashed again)."""
        if not self._checked:
            self._check(sorted(set(self.manifest.files) - self._own - {self.weights_table[0]}))
            self.weights()
            self._checked = True
        return self.root

    def check_every_file(self) -> None:
        """Checks every file's digest (``jaxport check``)."""
        self.opened_by_path()
        self._check(sorted(self._own))

    def _check(self, names: Sequence[str]) -> None:
        check_digests(Path(self.root), self.manifest.files, names, self.owner, self.known)

    def weights(self) -> SafetensorsFile | None:
        """The weights file, memory-mapped, checked once against the weights' records and the digest of its
        header (None without a weights file): the header's digest and each weight's (computed on several
        threads) cover every byte of the file, as the whole file's digest would, and name the weight that
        changed; a file found equal to the same records before, and unchanged since, is not hashed again.

        Raises:
            ArtifactError: the header or a weight differs from the manifest.
        """
        records: Sequence[WeightRecord]
        file, records, header_sha256 = self.weights_table
        if file and self._weights is None:
            from .safetensors_file import SafetensorsFile  # NumPy: 58 ms for a reader of manifests only

            path = Path(self.root, file)
            stored = SafetensorsFile(path)
            check_weights_header(records, stored.entries, stored.data_size)
            expected = hashlib.sha256("\0".join([header_sha256, *(w.sha256 for w in records)]).encode()).hexdigest()

            def check() -> str:
                check_weights_digests(header_sha256, records, hashlib.sha256(stored.header).hexdigest(),
                                      sha256_many([stored.tensor_bytes(w.name) for w in records]))
                return expected

            if self.known is None:
                check()
            else:
                self.known.check(path, stored.status, expected, check)
            self._weights = stored
        return self._weights
