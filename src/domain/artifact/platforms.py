"""Platforms: which of the exported platform branches a caller runs."""

from __future__ import annotations

from collections.abc import Sequence

from jaxport.domain.errors import PlatformMismatchError
from .safety import DisabledSafetyCheck

def normalize_platforms(platforms: Sequence[str]) -> tuple[str, ...]:
    """Lower-cases platform names, maps ``gpu`` to ``cuda`` and refuses duplicates.

    Raises:
        ValueError: a platform is empty or listed twice.
    """
    result: list[str] = []
    for p in platforms:
        name = "cuda" if p.lower() == "gpu" else p.lower()
        if not name:
            raise ValueError("An empty platform name was given in platforms=")
        if name in result:
            raise ValueError(f"Platform '{name}' is listed more than once in platforms={tuple(platforms)}")
        result.append(name)
    if not result:
        raise ValueError("platforms= must name at least one platform")
    return tuple(result)


def callee_platform_indices(fun_name: str, exported: Sequence[str], current: Sequence[str],
                            disabled: Sequence[DisabledSafetyCheck]) -> tuple[int, ...]:
    """For each platform of the caller, the index of the exported branch to run.

    Raises:
        PlatformMismatchError: a caller platform was not exported and the
            platform check was not disabled.
    """
    platform_check_disabled = DisabledSafetyCheck.platform() in disabled
    indices: list[int] = []
    for platform in current:
        if platform in exported:
            indices.append(exported.index(platform))
        elif platform_check_disabled:
            indices.append(0)
        else:
            raise PlatformMismatchError(fun_name, exported, current)
    return tuple(indices)
