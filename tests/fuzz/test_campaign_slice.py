"""A seeded slice of the fuzz campaign: every outcome typed, work bounded, nothing damaged loaded.

The same mutations on every run: flatbuffers decoded alone (jax's wheel,
records that use every field, nesting and sharing bombs), and artifacts
written by jaxport and by jax.export, loaded with verification and some
called. The long campaign is ``make fuzz`` (:mod:`tests.fuzz.campaign`).
"""

from __future__ import annotations

from tests.fuzz.campaign import campaign

MUTATIONS = 3_000


def test_a_slice_of_the_fuzz_campaign_meets_the_goal() -> None:
    counts = campaign(MUTATIONS, codec_share=0.4, jax_share=0.25, call_probability=0.3,
                      batch=MUTATIONS, seed=11)
    report = counts.report()
    assert counts.total() == MUTATIONS, report
    assert counts.bad() == 0, report
    codec, theirs, ours = (counts.by_family[f] for f in ("codec", "jax.export", "jaxport"))
    assert sum(codec.values()) >= 1_000 and sum(theirs.values()) >= 500, report
    assert codec["decoded"] > 0 and codec["refused"] > 0, report  # both checks of decoding ran
    assert ours["refused"] + ours["trailer_stripped"] == sum(ours.values()), report  # digest first
    assert theirs["call_ok"] + theirs["call_refused"] > 0, report  # the call-time part ran
