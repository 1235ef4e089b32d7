"""Generative bundles on JAX: the spec saved and checked, ``generate`` against a plain jit loop."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import jaxport
from jaxport.adapters.jax.bundles.generation import JaxStepRunner
from jaxport.application.cli.main import main
from jaxport.domain.generation.ports import StepBatch
from jaxport.errors import GenerationError, GenerationSpecError
from tests.helpers import gpt_model as gpt

PROMPTS = [[1, 2, 3], [4, 5], [7]]


@pytest.fixture(scope="module", params=[False, True], ids=["positions", "shared-cache"])
def saved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[bool, Path]:
    shared: bool = request.param
    return shared, gpt.save(tmp_path_factory.mktemp("gpt") / "model", shared)


@pytest.fixture(scope="module")
def generator(saved: tuple[bool, Path]) -> jaxport.Generator:
    """The saved model's generator, its steps compiled once for the tests that share it."""
    return jaxport.load_generator(saved[1])


def test_greedy_tokens_equal_a_plain_jit_loop_of_the_original_functions(saved: tuple[bool, Path],
                                                                         generator: jaxport.Generator) -> None:
    shared, _ = saved
    assert generator.generate([1, 2, 3], 8) == gpt.reference(shared, [1, 2, 3], 8)


def test_prompts_of_different_lengths_give_each_prompts_own_tokens(saved: tuple[bool, Path]) -> None:
    shared, path = saved
    generator = jaxport.load_generator(jaxport.load_bundle(path))
    assert generator.generate(PROMPTS, 5) == [gpt.reference(shared, p, 5) for p in PROMPTS]


def test_sampling_is_reproducible_from_its_seed_and_differs_across_seeds(generator: jaxport.Generator) -> None:
    runs = [generator.generate([1, 2, 3], 10, temperature=8.0, top_k=20, top_p=0.95, seed=s) for s in (1, 1, 2)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_a_stop_token_ends_the_text_and_streaming_yields_each_token(saved: tuple[bool, Path],
                                                                     generator: jaxport.Generator) -> None:
    shared, _ = saved
    expected = gpt.reference(shared, [1, 2, 3], 8)
    assert generator.generate([1, 2, 3], 8, stop=[expected[4]]) == expected[:expected.index(expected[4])]
    streamed = list(generator.stream(PROMPTS, 4))
    assert [[t.id for t in streamed if t.row == row] for row in range(3)] == generator.generate(PROMPTS, 4)
    assert [t.row for t in streamed[:3]] == [0, 1, 2]


def test_inspect_shows_the_generation_spec_without_jax(saved: tuple[bool, Path]) -> None:
    shared, path = saved
    text = str(jaxport.inspect(path))
    assert "generation: prefill 'prefill' (tokens, " in text
    assert ("index  int32[]" in text) == shared and "cache of 16 tokens" in text


def test_each_step_deletes_the_cache_it_was_given_and_writes_the_new_one_in_its_buffers(
        saved: tuple[bool, Path]) -> None:
    _, path = saved
    bundle = jaxport.load_bundle(path)
    spec = bundle.manifest.generation
    assert spec is not None
    runner = JaxStepRunner(bundle, spec)
    runner.start(1)
    mask = (1, 1) + (0,) * 14
    for function, tokens in (("prefill", (1, 2)), ("decode", (3,))):
        given = runner.cache
        assert given is not None
        buffers = [leaf.unsafe_buffer_pointer() for leaf in given]
        runner.step(function, StepBatch((tokens,), (tuple(range(len(tokens))),), (mask,), (len(tokens) - 1,)))
        assert all(leaf.is_deleted() for leaf in given)
        assert runner.cache is not None and not any(leaf.is_deleted() for leaf in runner.cache)
        # Donated and aliased: the step wrote in place (a donated cache that the module does not alias
        # is freed after the step, its results in new buffers: a copy of the cache every token).
        assert [leaf.unsafe_buffer_pointer() for leaf in runner.cache] == buffers


def test_a_text_prompt_without_a_tokenizer_is_refused(generator: jaxport.Generator) -> None:
    with pytest.raises(GenerationError, match="text needs a tokenizer"):
        generator.generate("hello", 2)


def test_a_bundle_without_a_generation_spec_has_no_generator(tmp_path: Path) -> None:
    jaxport.save_bundle(tmp_path / "plain", gpt.export_steps(False), gpt.make_params())
    with pytest.raises(GenerationError, match="holds no generation spec"):
        jaxport.load_generator(tmp_path / "plain")


def _without_tok(params: Any, tokens: Any, positions: Any, cache: Any) -> Any:
    logits, new = gpt._positions_step(params, tokens, positions, cache)
    return logits, {"k": new["k"], "v": new["v"]}


def _symbolic_length_prefill() -> jaxport.Exported:
    b, s, n = jaxport.symbolic_shape("b, s, n", constraints=("n <= 8",))

    def prefill(params: Any, tokens: Any, cache: Any) -> Any:
        return jax.nn.one_hot(tokens, gpt.VOCAB), cache

    return jaxport.export(jax.jit(prefill))(
        {"w": jax.ShapeDtypeStruct((2,), jnp.float32)}, jax.ShapeDtypeStruct((b, s), jnp.int32),
        {"k": jax.ShapeDtypeStruct((b, n), jnp.float32)})


def _cache_steps(prefill_length: int, decode_length: int, decode_width: int = 4) -> dict[str, jaxport.Exported]:
    """A prefill and a decode that return the cache they take: the prefill's of ``prefill_length`` slots,
    the decode's of ``decode_length`` slots of ``decode_width`` (the prefill's: 4)."""
    b, s = jaxport.symbolic_shape("b, s")
    d, = jaxport.symbolic_shape("b")

    def step(params: Any, tokens: Any, cache: Any) -> Any:
        return jax.nn.one_hot(tokens, gpt.VOCAB), cache

    weights = {"w": jax.ShapeDtypeStruct((2,), jnp.float32)}
    export = jaxport.export(jax.jit(step))
    return {"prefill": export(weights, jax.ShapeDtypeStruct((b, s), jnp.int32),
                              {"k": jax.ShapeDtypeStruct((b, prefill_length, 4), jnp.float32)}),
            "decode": export(weights, jax.ShapeDtypeStruct((d, 1), jnp.int32),
                             {"k": jax.ShapeDtypeStruct((d, decode_length, decode_width), jnp.float32)})}


@pytest.mark.parametrize("case", ["missing leaf", "axis beyond rank", "refused length", "eos outside",
                                  "cache lengths differ", "cache widths differ"])
def test_a_spec_that_does_not_fit_the_functions_is_refused_and_nothing_is_written(tmp_path: Path, case: str) -> None:
    functions = gpt.export_steps(False)
    params: Any = gpt.make_params()
    spec = gpt.spec(False)
    if case == "missing leaf":
        d, = jaxport.symbolic_shape("b")
        functions["decode"] = jaxport.export(jax.jit(_without_tok))(
            jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), params),
            jax.ShapeDtypeStruct((d, 1), jnp.int32), jax.ShapeDtypeStruct((d, 1), jnp.int32),
            gpt.empty_cache(d, shared_index=False))
        match = r"fit cache\['tok'\]: the leaf is missing from the cache in the results of 'decode'"
    elif case == "axis beyond rank":
        spec = gpt.spec(False, cache_axes={"k": (0, 3), "v": (0, 1), "tok": (0, 1)})
        match = r"fit cache\['k'\]: its sequence axis 3 is beyond its rank 3"
    elif case == "refused length":
        functions = {"prefill": _symbolic_length_prefill(), "decode": _symbolic_length_prefill()}
        params = {"w": jnp.zeros(2)}
        spec = jaxport.GenerationSpec(prefill_inputs=("tokens", "cache"), max_length=12)  # type: ignore[arg-type]
        match = r"fit the function 'prefill': it refuses a cache of max_length 12"
    elif case in ("cache lengths differ", "cache widths differ"):  # each function alone is sound
        functions = _cache_steps(288, 64) if case == "cache lengths differ" else _cache_steps(64, 64, 8)
        params = {"w": jnp.zeros(2)}
        spec = jaxport.GenerationSpec(prefill_inputs=("tokens", "cache"))  # type: ignore[arg-type]
        match = (r"fit cache\['k'\]: its sequence length is 64 in the arguments of 'decode' .*the cache holds 288"
                 if case == "cache lengths differ" else
                 r"fit cache\['k'\]: its axis 2 is 8 in the arguments of 'decode' .*4 in the prefill's cache")
    else:
        spec = gpt.spec(False, pad_id=32)
        match = r"pad_id \[32\] are outside the vocabulary \[0, 32\)"
    with pytest.raises(GenerationSpecError, match=match):
        jaxport.save_bundle(tmp_path / "model", functions, params, generation=spec)
    assert not (tmp_path / "model").exists() and list(tmp_path.iterdir()) == []


def test_the_command_line_prints_the_tokens_as_they_come(saved: tuple[bool, Path],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    shared, path = saved
    assert main(["generate", str(path), "--prompt-ids", "1,2,3", "--max-new-tokens", "5"]) == 0
    assert capsys.readouterr().out.split() == [str(t) for t in gpt.reference(shared, [1, 2, 3], 5)]
    assert main(["generate", str(path), "--prompt-ids", "1,2,3", "--top-p", "0"]) == 2
    assert capsys.readouterr().err.strip() == "jaxport generate: GenerationError: generate: top_p: 0.0 is not in (0, 1]"


MEMORY_CHILD = """
import json, sys
import jax.numpy as jnp, numpy as np
import jaxport
path, way = sys.argv[1], sys.argv[2]
if way == "donated":
    jaxport.load_generator(path).generate([1, 2, 3], 8)
else:  # the same steps as plain calls of the bundle: each step's cache is made beside the one it was given
    bundle = jaxport.load_bundle(path)
    spec = bundle.manifest.generation
    cache = {leaf.name: jnp.zeros(leaf.empty_shape(1, spec.max_length), leaf.dtype) for leaf in spec.cache}
    logits, cache = bundle["prefill"](np.asarray([[1, 2, 3]], np.int32), np.asarray([[0, 1, 2]], np.int32), cache)
    for i in range(7):
        token = np.asarray(logits)[:, -1].argmax(-1)[:, None].astype(np.int32)
        logits, cache = bundle["decode"](token, np.asarray([[3 + i]], np.int32), cache)
print(next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:")))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
def test_donating_the_cache_saves_at_least_0_8_of_one_cache_of_peak_memory(tmp_path: Path) -> None:
    ballast = 1 << 20  # 64 MiB of cache at one row: what a copy per step costs shows above the noise
    path = gpt.save(tmp_path / "model", ballast=ballast)
    peaks = {}
    for way in ("donated", "copied"):  # each loop in a fresh process of its own
        done = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(path), way], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        peaks[way] = int(done.stdout.split()[-1])
    cache_bytes = gpt.MAX_LENGTH * ballast * 4
    assert peaks["copied"] - peaks["donated"] >= 0.8 * cache_bytes, peaks


def test_token_ids_come_as_any_integer_array_like(saved: tuple[bool, Path], generator: jaxport.Generator) -> None:
    import numpy as np

    shared, _ = saved
    expected = gpt.reference(shared, [1, 2, 3], 4)
    for dtype in (np.int64, np.int32, np.uint8, np.int16):
        assert generator.generate(np.array([1, 2, 3], dtype), 4) == expected
    assert generator.generate([np.int64(1), np.int32(2), 3], 4) == expected
    batch = np.array([[1, 2, 3], [4, 5, 6]], np.int64)
    assert generator.generate(batch, 4) == [expected, gpt.reference(shared, [4, 5, 6], 4)]
    assert generator.generate([np.array([1, 2, 3]), np.array([7])], 4) == \
        [expected, gpt.reference(shared, [7], 4)]
    assert generator.generate(np.array([1, 2, 3]), 8, stop=np.array([expected[2]])) == expected[:2]
    assert [t.id for t in generator.stream(np.array([1, 2, 3], np.int32), 4)] == expected


@pytest.mark.parametrize(("prompt", "message"), [
    ([], r"prompt: the list is empty: give a prompt's token ids \(at least one\), or a batch of at least one"),
    ("np.array([1.0, 2.0])", r"prompt\[0\]: 1.0 is not an integer: a token id is an int \(or a NumPy integer\)"),
    ("np.array([1, 40])", r"prompt\[1\]: 40 is outside the vocabulary \[0, 32\)"),
    ("np.array(3)", r"prompt: an array of shape \(\) is one value, not a prompt: give token ids"),
    ("np.ones((2, 2, 2), np.int64)", r"prompt\[0\]: holds lists or texts: a batch of token ids is 2-D"),
    ([1] * 17, r"prompt: a prompt of 17 tokens does not fit the cache of 16 tokens .* at most 16 tokens"),
])
def test_a_bad_prompt_is_refused_saying_what_to_change(generator: jaxport.Generator, prompt: Any,
                                                       message: str) -> None:
    import numpy as np

    with pytest.raises(GenerationError, match=message):
        generator.generate(eval(prompt, {"np": np}) if isinstance(prompt, str) else prompt, 1)


def test_too_many_new_tokens_name_the_most_that_fit(generator: jaxport.Generator) -> None:
    with pytest.raises(GenerationError, match=r"max_new_tokens: a prompt of 5 tokens and 13 new ones need 17 cache "
                                              r"slots; the cache holds 16: ask for at most 12 new tokens"):
        generator.generate([1, 2, 3, 4, 5], 13)


def test_a_served_model_says_how_it_schedules_requests_and_why(saved: tuple[bool, Path]) -> None:
    from jaxport.application.generation.schedulers import scheduling_of

    shared, path = saved
    scheduling = scheduling_of(jaxport.load_generator(path), 8)
    if shared:
        assert (scheduling.continuous, scheduling.slots) == (False, 1)
        assert scheduling.reason.startswith("the decode takes a mask and no per-row positions")
        assert "--max-slots 8 does not apply: for continuous batching, export the prefill and the decode with " \
               "per-row positions" in scheduling.reason
    else:
        assert (scheduling.continuous, scheduling.slots) == (True, 8)
        assert scheduling.sentence().startswith("continuous batching: requests join a decode batch of 8 slots")
