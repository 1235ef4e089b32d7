"""A verdict store of a test's own: verdicts in a dict (:class:`jaxport.domain.ports.VerdictStore`)."""

from __future__ import annotations

from jaxport.domain.artifact.verification import Verdict


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
