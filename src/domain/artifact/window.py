"""JAX's compatibility window: which JAX releases promise to read an artifact, and which refuse it.

``jax.export`` promises that an artifact is read by the JAX releases built up to
six months after it was written
(https://docs.jax.dev/en/latest/export/export.html#compatibility-guarantees),
and then drops what the old layouts need: its dated log of format versions
(``jax/_src/export/serialization.py``, :data:`FORMAT_DATES`) says when each
layout was last written. Two such drops are done (jax-ml/jax commits 194ba2c922
and 76eb902f16, both first released in JAX 0.11.1): the device count in the
16-bit field alone (artifacts of JAX 0.8.1 and older) and HLO sharding protos
(before 2026-01-15) are refused. More are planned in its code: the legacy
``in_avals``/``out_avals`` vectors (six months after 2026-04-04), inferring a
device's platform from its kind (after 2026-11-15), and a check of the
recorded version number itself after 2027-01-27, which every artifact that
records ``serialization_version`` 3 (JAX 0.11.0 and older wrote 3 whatever their
generation) fails. ``jaxport upgrade`` renews an artifact: the same program
written again at the newest format version (:mod:`.renewal`).

An artifact's date here is the later of its recorded format version's date and the
release date of the JAX that wrote it, where it names one; a release's date is
its own (:data:`JAX_RELEASES`, JAX's CHANGELOG.md), or, where that is not known, the
date of the newest format version its reader knows, a bound it is not older than.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Final

from .consumers import Consumer, writer_of
from .producer import release_key
from .record import ArtifactRecord

_D = datetime.date

#: ``serialization_version`` -> the date JAX's log gives it (version 1: November 2023; 7 was withdrawn).
FORMAT_DATES: Final = {
    1: _D(2023, 11, 1), 2: _D(2023, 12, 16), 3: _D(2024, 10, 16), 4: _D(2025, 4, 7), 5: _D(2025, 11, 23),
    6: _D(2026, 1, 15), 8: _D(2026, 3, 12), 9: _D(2026, 3, 17), 10: _D(2026, 4, 4), 11: _D(2026, 5, 15),
    12: _D(2026, 7, 29), 13: _D(2026, 10, 30),
}
#: Release dates: JAX's CHANGELOG.md (0.7.0 to 0.11.0), the jax-v0.8.3 tag's commit, and issue 61 (0.12.1).
JAX_RELEASES: Final = {
    "0.7.0": _D(2025, 7, 22), "0.7.1": _D(2025, 8, 20), "0.7.2": _D(2025, 9, 16), "0.8.0": _D(2025, 10, 15),
    "0.8.1": _D(2025, 11, 18), "0.8.2": _D(2025, 12, 18), "0.8.3": _D(2026, 1, 28), "0.9.0": _D(2026, 1, 20),
    "0.9.1": _D(2026, 3, 2), "0.9.2": _D(2026, 3, 18), "0.10.0": _D(2026, 4, 16), "0.10.1": _D(2026, 5, 20),
    "0.10.2": _D(2026, 6, 17), "0.11.0": _D(2026, 7, 16), "0.12.1": _D(2026, 11, 18),
}
#: The first JAX release that refuses HLO sharding protos and a device count in the 16-bit field alone.
REFUSES_EXPIRED: Final = "0.11.1"
#: How long JAX promises to read an artifact.
WINDOW_MONTHS: Final = 6
RENEW: Final = "`jaxport upgrade` renews it"


def six_months_after(day: datetime.date) -> datetime.date:
    """The same day six months later (the month's last day when it has no such day).

    >>> six_months_after(datetime.date(2026, 8, 31))
    datetime.date(2027, 2, 28)
    """
    month = day.month - 1 + WINDOW_MONTHS
    year, month = day.year + month // 12, month % 12 + 1
    for last in (31, 30, 29, 28):
        try:
            return day.replace(year=year, month=month, day=min(day.day, last))
        except ValueError:
            continue
    raise AssertionError("unreachable")


def release_date(jax_version: str) -> tuple[datetime.date | None, bool]:
    """``(date, exact)``: a JAX release's date, or the date its reader's newest format version was
    logged (not exact: it is not older), or None when neither is known."""
    for version, day in JAX_RELEASES.items():
        if release_key(version) == release_key(jax_version):
            return day, True
    return None, False


def artifact_date(record: ArtifactRecord) -> tuple[datetime.date | None, str]:
    """The artifact's date for JAX's window, and what it comes from (see the module's text)."""
    version = record.serialization_version
    found = [(FORMAT_DATES[version], f"serialization version {version}")] if version in FORMAT_DATES else []
    writer = writer_of(record)
    day = release_date(writer)[0] if writer else None
    if day is not None:
        found.append((day, f"written by JAX {writer}"))
    return max(found) if found else (None, "no recorded date")


def consumer_date(consumer: Consumer) -> tuple[datetime.date | None, bool]:
    """A JAX consumer's release date (exact), or the date of the newest format version its reader
    knows (a bound it is not older than); None for TensorFlow, which reads the module alone."""
    if consumer.runtime != "jax":
        return None, False
    day, exact = release_date(consumer.version)
    if day is None and consumer.serialization in FORMAT_DATES:
        return FORMAT_DATES[consumer.serialization], False
    return day, exact


def window_reasons(record: ArtifactRecord, consumer: Consumer, *, only_short_device_count: bool) -> tuple[str, ...]:
    """Why ``consumer`` refuses the artifact as expired (empty when it does not)."""
    if consumer.runtime != "jax" or release_key(consumer.version) < release_key(REFUSES_EXPIRED):
        return ()
    reasons = []
    for order, table in enumerate(record.chain):
        where = "" if order == 0 else f" (VJP of order {order})"
        if table.uses_hlo_shardings:
            reasons.append(f"{consumer} refuses the HLO sharding protos of in_shardings/out_shardings{where}, "
                           f"written before 2026-01-15 (JAX {REFUSES_EXPIRED} and later: 'older than the "
                           f"6-month backward-compatibility window'); {RENEW}")
            break
    if only_short_device_count:
        reasons.append(f"{consumer} refuses a device count recorded in nr_devices_short alone (JAX 0.8.1 "
                       f"and older wrote it so; JAX {REFUSES_EXPIRED} and later refuse it); {RENEW}")
    return tuple(reasons)


def window_notes(record: ArtifactRecord, consumers: Sequence[Consumer]) -> tuple[str, ...]:
    """For each JAX consumer built more than six months after the artifact's date: a note that it
    is outside JAX's window, and that ``jaxport upgrade`` renews it."""
    day, source = artifact_date(record)
    if day is None:
        return ()
    end = six_months_after(day)
    notes = []
    for consumer in consumers:
        built, exact = consumer_date(consumer)
        if built is not None and built > end:
            when = f"released {built}" if exact else f"released after {built}"
            notes.append(f"the artifact ({source}, {day}) is outside {consumer}'s window ({when}, more than "
                         f"{WINDOW_MONTHS} months after; JAX promises to read it up to {end}); {RENEW}")
    return tuple(notes)


def window_line(record: ArtifactRecord) -> str | None:
    """What ``jaxport inspect`` says of the window: up to when JAX promises to read the artifact."""
    day, source = artifact_date(record)
    if day is None:
        return None
    return (f"JAX promises to read it up to {six_months_after(day)} ({WINDOW_MONTHS} months after "
            f"{day}: {source}); {RENEW} at the newest format version")
