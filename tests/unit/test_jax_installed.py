"""The one check of JAX (issue 36): missing, or outside the tested range, is a MissingExtraError naming
``jaxport[jax]``; the range is pyproject.toml's extra ``jax``."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from jaxport.adapters.jax import installed
from jaxport.errors import MissingExtraError

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.fixture(autouse=True)
def fresh_check() -> Iterator[None]:
    installed._problem.cache_clear()
    yield
    installed._problem.cache_clear()


def _versions(monkeypatch: pytest.MonkeyPatch, versions: dict[str, str]) -> None:
    def version(name: str) -> str:
        if name not in versions:
            raise importlib.metadata.PackageNotFoundError(name)
        return versions[name]

    monkeypatch.setattr(importlib.metadata, "version", version)


def test_the_range_is_the_extras() -> None:
    extra = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["jax"]
    assert extra == [f"jax{installed.TESTED_RANGE}", f"jaxlib{installed.TESTED_RANGE}"]
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    assert not [d for d in dependencies if d.startswith(("jax", "tensorflow"))]


@pytest.mark.parametrize("version", ["0.10.2", "0.11.2", "0.12.0.1", "0.12.0rc1"])
def test_a_release_of_the_range_passes(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    _versions(monkeypatch, {"jax": version, "jaxlib": version})
    installed.require_jax()


@pytest.mark.parametrize("version", ["0.9.2", "0.10.1", "0.12.2", "0.13.0", "1.0"])
def test_a_release_outside_the_range_names_it_and_the_range(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    _versions(monkeypatch, {"jax": version, "jaxlib": "0.12.0"})
    with pytest.raises(MissingExtraError) as raised:
        installed.require_jax()
    assert str(raised.value) == (f"jax {version} is installed, outside the range jaxport is tested on "
                                 f"(jax>=0.10.2,<0.12.2): install it with pip install 'jaxport[jax]'")
    assert installed.as_missing_jax(AttributeError("module 'jax' has no attribute 'x'")) is not None


def test_no_jax_is_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    _versions(monkeypatch, {})
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingExtraError, match=r"^JAX \(jax\) is not installed: install it with "
                                                r"pip install 'jaxport\[jax\]'$"):
        installed.require_jax()
    missing = installed.as_missing_jax(ModuleNotFoundError("No module named 'jax'", name="jax"))
    assert isinstance(missing, MissingExtraError)
    assert installed.as_missing_jax(ModuleNotFoundError("No module named 'onnx'", name="onnx")) is None
    assert installed.as_missing_jax(ValueError("not an import")) is None


def test_jax_in_range_stands_for_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    _versions(monkeypatch, {"jax": "0.12.0", "jaxlib": "0.12.0"})
    assert installed.as_missing_jax(ModuleNotFoundError("No module named 'jax._x'", name="jax._x")) is None


@pytest.mark.parametrize("version", ["0.9.2", "0.12.2", "0.13.0"])
def test_the_explicit_override_lets_a_release_outside_the_range_run(monkeypatch: pytest.MonkeyPatch,
                                                                      version: str) -> None:
    _versions(monkeypatch, {"jax": version, "jaxlib": version})
    monkeypatch.setenv(installed.ALLOW_UNTESTED, "1")
    installed.require_jax()
    # A name that release lacks is left as what it is: the error names the changed internal.
    assert installed.as_missing_jax(AttributeError("module 'jax._src.core' has no attribute 'x'")) is None


@pytest.mark.parametrize("value", ["", "0", "true", "yes"])
def test_the_override_is_on_only_when_set_to_1(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    _versions(monkeypatch, {"jax": "0.13.0", "jaxlib": "0.13.0"})
    monkeypatch.setenv(installed.ALLOW_UNTESTED, value)
    with pytest.raises(MissingExtraError, match="outside the range"):
        installed.require_jax()


def test_the_override_is_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    _versions(monkeypatch, {"jax": "0.13.0", "jaxlib": "0.13.0"})
    monkeypatch.delenv(installed.ALLOW_UNTESTED, raising=False)
    with pytest.raises(MissingExtraError, match="outside the range"):
        installed.require_jax()
