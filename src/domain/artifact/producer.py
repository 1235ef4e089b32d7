"""Which versions wrote an artifact or a bundle: jaxport, JAX, jaxlib and the StableHLO target.

Sealed artifacts carry it in the jaxport trailer (:mod:`.integrity`, key
``"producer"``) and bundles in their manifest; ``jax.export``'s format has no
place for it, so an unsealed artifact or one that ``jax.export`` wrote says
nothing about its producer. It tells a consumer what made the bytes; it is no
part of the program (``jaxport diff`` does not count it as a difference).
Versions compare by :func:`release_key`, as pip compares them.

>>> p = Producer(jaxport="0.1.0", jax="0.10.2", jaxlib="0.10.2", stablehlo="1.15.0")
>>> str(p)
'jaxport 0.1.0, jax 0.10.2, jaxlib 0.10.2, StableHLO target 1.15.0'
>>> Producer.from_json(p.to_json()) == p
True
>>> Producer.from_json({"jaxport": "9.9"}) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final


#: The longest version text read.
MAX_VERSION_CHARS: Final = 128
#: This jaxport's version, written here only: ``jaxport.__version__`` reads it
#: on first use (so ``import jaxport`` still loads none of jaxport's modules),
#: and pyproject.toml's ``[tool.setuptools.dynamic]`` reads it when building.
JAXPORT_VERSION: Final = "0.1.0"


@dataclass(frozen=True, slots=True)
class Producer:
    """The versions of the software that wrote some bytes.

    Attributes:
        jaxport: jaxport's version.
        jax: JAX's version.
        jaxlib: jaxlib's version.
        stablehlo: the StableHLO version jaxport serializes modules for.
    """

    jaxport: str
    jax: str
    jaxlib: str
    stablehlo: str

    def __str__(self) -> str:
        return (f"jaxport {self.jaxport}, jax {self.jax}, jaxlib {self.jaxlib}, "
                f"StableHLO target {self.stablehlo}")

    def to_json(self) -> dict[str, str]:
        """The versions as a JSON object (one string per field)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @staticmethod
    def from_json(value: object) -> Producer | None:
        """The record that :meth:`to_json` wrote; other keys are skipped.

        None when ``value`` is not such a record (a field missing, or not a
        string of at most :data:`MAX_VERSION_CHARS` characters): the versions
        inform, they never decide whether bytes load, so a producer this
        jaxport cannot read is left out as an unknown key is.
        """
        if not isinstance(value, dict):
            return None
        found = [value.get(f.name) for f in fields(Producer)]
        texts = [t for t in found if isinstance(t, str) and len(t) <= MAX_VERSION_CHARS]
        return Producer(*texts) if len(texts) == len(found) else None


def release_key(version: str) -> tuple[int, ...]:
    """A release's version as numbers that compare as pip compares them (``2.21`` is ``2.21.0``)."""
    parts = [int(p) if p.isdigit() else -1 for p in version.strip().split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)
