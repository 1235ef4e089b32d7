"""The engines' run: ``make test-engines`` runs this folder in a virtual environment of its own
(``build/venv-engines``: jaxport's ``jax``, ``onnx``, ``ray``, ``beam`` and ``serve`` extras; Beam's numpy cap and
Ray's protobuf do not fit the main one) with ``JAXPORT_ENGINE_TESTS=1``. Without it (the main suite) the folder's
tests are skipped.

HOME points to a temporary directory for the whole run (Ray writes ``~/.ray``; Beam's portable runners
``~/.apache_beam``), and Ray's session files go under the test's temporary directory.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.extras import skip_folder_unless

ENV = "JAXPORT_ENGINE_TESTS"
if os.environ.get(ENV):
    _HOME = tempfile.mkdtemp(prefix="jaxport-engines-home-")
    os.environ["HOME"] = _HOME
    atexit.register(shutil.rmtree, _HOME, True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_folder_unless(ENV, "the engines' run (make test-engines)", Path(__file__).parent, items)


@pytest.fixture(scope="session")
def directories(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``bundle`` and ``onnx`` (:mod:`tests.helpers.engine_models`) under one temporary directory."""
    from tests.helpers import engine_models

    root = tmp_path_factory.mktemp("engines")
    engine_models.make_onnx(root)
    return root


@pytest.fixture(scope="session")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A local Ray on 127.0.0.1 with 2 CPUs and no dashboard, its files under the run's temporary directory
    (or a short one in /tmp where that path is too long for Ray's sockets); shut down after the run."""
    import ray

    temp = tmp_path_factory.mktemp("ray")
    short = None
    if len(str(temp)) > 40:  # Ray's socket paths under it must stay within 107 characters
        temp = Path(short := tempfile.mkdtemp(prefix="jray-", dir="/tmp"))
    ray.init(_node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2, _temp_dir=str(temp),
             log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()
        if short is not None:
            shutil.rmtree(short, ignore_errors=True)


@pytest.fixture(scope="module")
def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (never Serve's default 8000, which two runs would share)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
