"""Text in and out of a generative bundle: a tokenizer trained in the test, a chat template."""

from __future__ import annotations

from pathlib import Path

import pytest

import jaxport
from jaxport.application.cli.main import main
from jaxport.errors import GenerationError, GenerationSpecError
from tests.helpers import gpt_model as gpt

pytest.importorskip("tokenizers", reason="needs the extra jaxport[text]")
pytest.importorskip("jinja2", reason="needs the extra jaxport[text]")
from tokenizers import Tokenizer  # noqa: E402  # after the skip: the extra may be missing


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Tokenizer]:
    root = tmp_path_factory.mktemp("text")
    file = gpt.tiny_tokenizer(root / "tokenizer.json")
    path = gpt.save(root / "model", tokenizer=str(file), chat_template=gpt.CHAT_TEMPLATE)
    return path, Tokenizer.from_file(str(file))


def _expected(tokenizer: Tokenizer, text: str, n: int) -> str:
    return str(tokenizer.decode(gpt.reference(False, tokenizer.encode(text).ids, n)))


def test_text_in_gives_text_out_and_streams_it_piece_by_piece(saved: tuple[Path, Tokenizer]) -> None:
    path, tokenizer = saved
    generator = jaxport.load_generator(path)
    expected = _expected(tokenizer, "the cat sat", 6)
    assert generator.generate("the cat sat", 6) == expected
    assert "".join(t.text or "" for t in generator.stream("the cat sat", 6)) == expected
    assert generator.generate(["the cat sat", "a dog"], 4) == [_expected(tokenizer, t, 4) for t in ("the cat sat", "a dog")]


def test_a_chat_is_rendered_with_the_bundled_template(saved: tuple[Path, Tokenizer]) -> None:
    path, tokenizer = saved
    generator = jaxport.load_generator(path)
    messages = [{"role": "user", "content": "the dog"}, {"role": "assistant", "content": "sat"}]
    assert generator.render_chat(messages) == "the dog sat the"
    assert generator.chat(messages, 5) == _expected(tokenizer, "the dog sat the", 5)
    with pytest.raises(GenerationError, match=r"messages: the chat template refused them: the first message is not"):
        generator.chat([{"role": "system", "content": "be brief"}], 2)


def test_the_onnx_conversion_carries_the_tokenizer(saved: tuple[Path, Tokenizer], tmp_path: Path) -> None:
    path, tokenizer = saved
    jaxport.to_onnx(path, tmp_path / "onnx")
    assert jaxport.load_generator(tmp_path / "onnx").generate("the cat sat", 6) == _expected(tokenizer, "the cat sat", 6)


def test_a_tokenizer_or_template_that_cannot_be_read_is_refused_at_save(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"model": 3}')
    with pytest.raises(GenerationSpecError, match=r"the tokenizer .*bad.json: tokenizers cannot read it"):
        gpt.save(tmp_path / "a", tokenizer=str(tmp_path / "bad.json"))
    with pytest.raises(GenerationSpecError, match=r"the chat template: it does not parse: line 1"):
        gpt.save(tmp_path / "b", chat_template="{% for m in messages %}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]


def test_the_command_line_prints_the_text(saved: tuple[Path, Tokenizer],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path, tokenizer = saved
    assert main(["generate", str(path), "--prompt", "the cat sat", "--max-new-tokens", "6"]) == 0
    assert capsys.readouterr().out == _expected(tokenizer, "the cat sat", 6) + "\n"
