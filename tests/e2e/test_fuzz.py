"""A bounded fuzz campaign: every outcome typed, no crash, no damaged jaxport artifact loaded.

The long campaign is ``make fuzz`` (:mod:`tests.fuzz.campaign`).
"""

from __future__ import annotations

from tests.fuzz.campaign import BAD_OUTCOMES, campaign

MUTATIONS = 3_000


def test_a_bounded_fuzz_campaign_meets_the_goal() -> None:
    counts = campaign(MUTATIONS, jax_share=0.25, call_probability=0.3, batch=MUTATIONS, seed=11)
    report = counts.report()
    assert counts.total() == MUTATIONS, report
    assert counts.bad() == 0, report
    theirs, ours = counts.by_writer["jax.export"], counts.by_writer["jaxport"]
    assert sum(theirs.values()) >= 500, report
    assert ours["refused"] + ours["trailer_stripped"] == sum(ours.values()), report  # digest first
    assert theirs["call_ok"] + theirs["call_refused"] > 0, report  # the call-time part ran
    assert not set(theirs) & set(BAD_OUTCOMES), report
