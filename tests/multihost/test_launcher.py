"""The launcher runs one script in several processes and reports failures with every output."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.multihost.launcher import MultiProcessError, run_processes


def test_each_process_sees_its_id_the_count_and_one_coordinator(tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text("import os, sys\n"
                      "print(os.environ['JAXPORT_PROCESS_ID'], os.environ['JAXPORT_NUM_PROCESSES'],"
                      " os.environ['JAXPORT_COORDINATOR'], sys.argv[1])\n")
    outs = run_processes(script, 3, args=["hello"], timeout=60)
    fields = [out.split() for out in outs]
    assert [f[:2] for f in fields] == [["0", "3"], ["1", "3"], ["2", "3"]]
    assert len({f[2] for f in fields}) == 1 and fields[0][2].startswith("127.0.0.1:")
    assert {f[3] for f in fields} == {"hello"}


def test_a_failing_process_stops_the_others_and_its_error_is_reported(tmp_path: Path) -> None:
    script = tmp_path / "fail.py"
    script.write_text("import os, time\n"
                      "if os.environ['JAXPORT_PROCESS_ID'] == '1':\n"
                      "    raise SystemExit('process one gives up')\n"
                      "time.sleep(60)\n")
    with pytest.raises(MultiProcessError, match="process 1 exited with status 1") as info:
        run_processes(script, 2, timeout=30)
    assert "process one gives up" in str(info.value)
