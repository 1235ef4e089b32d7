"""A generative bundle's chat template and tokenizer bounded, and checked at load, by ``jaxport check`` and
before ``jaxport serve`` reports ready.

The template runs in rendering processes under a deadline (5 s by default), a memory bound (256 MiB) and an
output bound (4 Mi characters): :data:`tests.helpers.hostile_generation.BOMB_TEMPLATE` holds one bomb of each.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import jaxport
from jaxport.application.cli.main import main
from jaxport.errors import ArtifactError, GenerationError, GenerationSpecError, JaxportError
from tests.helpers import gpt_model as gpt
from tests.helpers.hostile_generation import BOMB_TEMPLATE, changed
from tests.helpers.serving import Server

pytest.importorskip("tokenizers", reason="needs the extra jaxport[text]")
pytest.importorskip("jinja2", reason="needs the extra jaxport[text]")

GOOD = [{"role": "user", "content": "the dog"}, {"role": "assistant", "content": "sat"}]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bounds")
    tokenizer = gpt.tiny_tokenizer(root / "tokenizer.json")
    return gpt.save(root / "gpt", tokenizer=str(tokenizer), chat_template=BOMB_TEMPLATE)


@pytest.mark.parametrize(("content", "bound"), [
    ("spin", r"did not finish within its bound of 5 s \(JAXPORT_TEMPLATE_SECONDS\)"),
    ("loop", r"writes more than its bound of 4194304 characters"),
    ("boom", r"needs more than its bound of 256 MiB"),
])
def test_each_template_bomb_is_refused_by_its_bound_on_chat(bundle: Path, content: str, bound: str) -> None:
    generator = jaxport.load_generator(bundle)
    with pytest.raises(GenerationError, match=bound) as refused:
        generator.chat([{"role": "user", "content": content}], 2)
    assert f"the chat template of {bundle}" in str(refused.value)
    assert generator.render_chat(GOOD) == "the dog sat the"  # the next conversation renders, in a fresh child
    assert generator.chat(GOOD, 3) == generator.generate("the dog sat the", 3)


def _no_parse(generation: dict[str, Any]) -> None:
    generation["chat_template"] = "{% for m in messages %}"


def _outside(generation: dict[str, Any]) -> None:
    generation["eos_ids"] = [generation["vocab_size"] + 3]


def _same(generation: dict[str, Any]) -> None:
    pass


HOSTILE: dict[str, tuple[Callable[[dict[str, Any]], None], dict[str, bytes], type[JaxportError], str]] = {
    "a template that does not parse": (_no_parse, {}, GenerationSpecError, "chat template of .* does not parse"),
    "a tokenizer that does not parse": (_same, {"tokenizer.json": b'{"model": 3}'}, GenerationSpecError,
                                        "tokenizers cannot read it"),
    "an end-of-text id outside the vocabulary": (_outside, {}, ArtifactError, r"ids \[\d+\] are outside the vocab"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_generative_parts_are_refused_at_load_check_and_before_serve_is_ready(
        bundle: Path, tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]) -> None:
    change, files, error, match = HOSTILE[case]
    copy = changed(bundle, tmp_path / "copy", change, files)
    with pytest.raises(error, match=match):
        jaxport.load_generator(copy)
    assert main(["check", str(copy)]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "FAILED" in out and any(word in out for word in ("parse", "cannot read", "outside the vocab")), out
    server = Server(copy, (), tmp_path / "serve.log").launch()
    assert server.process is not None
    try:
        status = server.process.wait(120)  # the load fails: the server stops before it is ready
    except subprocess.TimeoutExpired:
        server.stop(timeout=30)
        raise
    assert status != 0 and "ready:" not in server.output(), server.output()


def test_a_tokenizer_over_its_bound_is_refused_before_it_is_parsed(bundle: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    size = (bundle / "tokenizer.json").stat().st_size
    monkeypatch.setenv("JAXPORT_MAX_TOKENIZER_BYTES", str(size - 1))
    with pytest.raises(GenerationSpecError, match=rf"its {size} bytes are more than the {size - 1} read "
                                                  r"\(JAXPORT_MAX_TOKENIZER_BYTES\); it is not parsed"):
        jaxport.load_generator(bundle)
    assert main(["check", str(bundle)]) == 1 and "JAXPORT_MAX_TOKENIZER_BYTES" in capsys.readouterr().out
    monkeypatch.setenv("JAXPORT_MAX_TOKENIZER_BYTES", str(size))
    assert jaxport.load_generator(bundle).render_chat(GOOD) == "the dog sat the"
    assert main(["check", str(bundle)]) == 0
