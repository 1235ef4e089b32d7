"""A verdict store of a test's own: verdicts in a dict (:class:`jaxport.domain.ports.VerdictStore`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from jaxport.domain.artifact.verification import Verdict

if TYPE_CHECKING:
    from jaxport.application.conversion.loader import ConvertedLoader


class FakeVerdictStore:
    """Verdicts in a dict, for a service or an adapter built on a test's own ports."""

    def __init__(self) -> None:
        self.verdicts: dict[str, Verdict] = {}

    def get(self, key: str) -> Verdict | None:
        """The verdict remembered under ``key``, or None."""
        return self.verdicts.get(key)

    def put(self, key: str, verdict: Verdict) -> None:
        """Remembers ``verdict`` under ``key``."""
        self.verdicts[key] = verdict


def loader_on(store: FakeVerdictStore) -> ConvertedLoader:
    """A loader of converted directories on ``store`` (its known files and its directories' verdicts) and
    every target's adapters; a bundle is loaded by the process's bundle loader."""
    from jaxport.adapters.storage.checked_directory import StatKnownFiles
    from jaxport.adapters.storage.opened_directory import DiskDirectories
    from jaxport.application import wiring
    from jaxport.application.conversion.loader import ConvertedLoader
    from jaxport.application.conversion.verify_directory import DirectoryVerifier
    from jaxport.application.target_adapters import ADAPTERS

    return ConvertedLoader(DiskDirectories(StatKnownFiles(store)), DirectoryVerifier(store), ADAPTERS,
                           lambda directory: wiring.bundle_loader().load(directory))
