"""The command's exit status: 2 and one line for the user's mistakes, 70 and the traceback for jaxport's bugs.

A bug is provoked by replacing one of jaxport's own functions with one that
raises, as a defect in it would.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from jaxport.application.cli import main as cli
from jaxport.application.cli import diff

BUG_LINE = "jaxport: this is a bug in jaxport; please report it with the traceback below"
USER_MODULE = "exit_codes_model"
PROGRAMS = '''
import jax.numpy as jnp

def ident(x):
    return x

def wrong_key(params, x):
    return x @ params["nope"]

def wrong_shapes(x):
    return x @ x

def uneven_reshape(x):
    return x.reshape(3, -1)
'''


def test_an_unexpected_exception_exits_70_with_the_bug_line_and_the_traceback(tmp_path: Path) -> None:
    script = textwrap.dedent('''
        import sys
        from jaxport.application.cli import inspect_command
        from jaxport.application.cli.main import main

        def read_artifact(path):
            raise RuntimeError("a defect deep inside jaxport")

        inspect_command.read_artifact = read_artifact
        sys.exit(main(["inspect", "some.jaxport"]))
    ''')
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 70, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == BUG_LINE
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "RuntimeError: a defect deep inside jaxport"
    assert done.stdout == ""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory holding the user's module, as the current directory (which export puts on sys.path)."""
    (tmp_path / f"{USER_MODULE}.py").write_text(PROGRAMS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [*sys.path])
    monkeypatch.delitem(sys.modules, USER_MODULE, raising=False)
    yield tmp_path
    sys.modules.pop(USER_MODULE, None)


def raising(exc: Exception) -> object:
    def fail(*args: object, **kwargs: object) -> object:
        raise exc
    return fail


def test_a_builtin_error_from_jaxport_itself_is_a_bug_even_of_a_type_that_jax_raises_for_bad_input(
        workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(diff, "read_artifact_and_trailer", raising(TypeError("unsupported operand")))
    assert cli.main(["diff", "a.jaxport", "b.jaxport"]) == 70
    err = capsys.readouterr().err
    assert err.startswith(BUG_LINE + "\nTraceback (most recent call last):\n")
    assert err.endswith("TypeError: unsupported operand\n")


def test_an_error_of_jaxport_while_exporting_is_a_bug_although_export_runs_the_users_code(
        workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from jaxport.application.export import service as export_service

    monkeypatch.setattr(export_service, "export", raising(RuntimeError("lowering went wrong")))
    assert cli.main(["export", f"{USER_MODULE}:ident", "--arg", "f32[3]", "-o", "x.jaxport"]) == 70
    err = capsys.readouterr().err
    assert err.startswith(BUG_LINE) and err.endswith("RuntimeError: lowering went wrong\n")
    assert not (workdir / "x.jaxport").exists()


USERS_MISTAKES = {
    "a KeyError in the user's function": (
        ["export", f"{USER_MODULE}:wrong_key", "--params", "w.npz", "--arg", "f32[2,3]", "-o", "b"],
        "jaxport export: KeyError: 'nope'"),
    "JAX's TypeError for the user's shapes": (
        ["export", f"{USER_MODULE}:wrong_shapes", "--arg", "f32[3,4]", "-o", "x.jaxport"],
        "jaxport export: TypeError: dot_general requires contracting dimensions to have the same shape"),
    "JAX's own inconclusive dimension": (
        ["export", f"{USER_MODULE}:uneven_reshape", "--arg", "f32[b]", "-o", "x.jaxport"],
        "jaxport export: InconclusiveDimensionOperation: Cannot divide evenly the sizes of shapes (b,)"),
    "an array of strings": (
        ["run", "ident.jaxport", "--input", "strings.npy"],
        "jaxport run: DtypeMismatchError: Dtype mismatch for args[0]: expected float32 and called with <U2"),
}


@pytest.mark.parametrize("case", sorted(USERS_MISTAKES))
def test_the_users_mistakes_are_one_line_with_status_2(
        workdir: Path, case: str, capsys: pytest.CaptureFixture[str]) -> None:
    np.savez(workdir / "w.npz", w=np.ones((3, 2), np.float32))
    np.save(workdir / "strings.npy", np.array(["ab", "cd", "ef"]))
    assert cli.main(["export", f"{USER_MODULE}:ident", "--arg", "f32[3]", "-o", "ident.jaxport"]) == 0
    args, message = USERS_MISTAKES[case]
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(message), err
