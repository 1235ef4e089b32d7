"""``make test-newest-jax``'s report (tests/helpers/newest_jax.py) on the JUnit files of its runs: a test of JAX's
suites counts as differing only when it fails through jaxport and not through jax.export."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.newest_jax import counts, failed_tests

JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">{}</testsuite></testsuites>"""


def _junit(path: Path, outcomes: dict[str, str]) -> Path:
    cases = []
    for name, outcome in outcomes.items():
        inner = {"passed": "", "failed": '<failure message="AssertionError: bytes differ&#10;more">x</failure>',
                 "error": '<error message="ImportError: cannot import name x">x</error>',
                 "skipped": '<skipped message="Test enabled only for tpu" />'}[outcome]
        cases.append(f'<testcase classname="export_test.JaxExportTest" name="{name}" time="0.1">{inner}</testcase>')
    path.write_text(JUNIT.format("".join(cases)))
    return path


def test_a_suite_counts_the_failures_through_jaxport_that_jax_export_passes(tmp_path: Path) -> None:
    ours = _junit(tmp_path / "export_test.jaxport.xml", {"a": "failed", "b": "failed", "c": "passed", "d": "error"})
    theirs = _junit(tmp_path / "export_test.jax.export.xml", {"a": "failed", "b": "passed", "c": "passed", "d": "passed"})
    found = [d.text for d in failed_tests([ours, theirs])]
    assert found == ["export_test.jaxport: export_test.JaxExportTest::b (passes through jax.export): "
                     "AssertionError: bytes differ",
                     "export_test.jaxport: export_test.JaxExportTest::d (passes through jax.export): "
                     "ImportError: cannot import name x"]
    assert counts(ours) == "1 passed, 3 failed, 0 skipped"
    assert counts(theirs) == "3 passed, 1 failed, 0 skipped"


def test_a_run_without_a_peer_counts_every_failure_and_a_missing_file_says_so(tmp_path: Path) -> None:
    interop = _junit(tmp_path / "interop.xml", {"a": "failed", "b": "skipped", "c": "passed"})
    found = [(d.kind, d.text) for d in failed_tests([interop, tmp_path / "gone.xml"])]
    assert found == [("a failed test", "interop: export_test.JaxExportTest::a: AssertionError: bytes differ"),
                     ("a failed test", f"{tmp_path / 'gone.xml'}: no results (the run did not finish)")]
    assert counts(interop) == "1 passed, 1 failed, 1 skipped"
