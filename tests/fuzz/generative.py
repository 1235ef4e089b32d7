"""Hostile generative bundles and ONNX directories, seeded: specs, tokenizers, templates, GenAI files, damage.

:func:`hostile` makes the ``index``-th hostile copy of a generative directory (the same seed and index give
the same copy): its manifest's generation table made hostile and re-sealed (ids, lengths, axes, leaves,
functions, types), its ``tokenizer.json`` replaced and re-sealed (garbage, cut, deeply nested, another
model), its chat template replaced (bombs of time, memory and output, recursion, syntax errors), its GenAI
files replaced (an ONNX directory's ``genai_config.json``), or a file damaged without re-sealing.
:func:`outcome` runs ``load_generator``, ``generate``, ``chat`` and ``jaxport check`` on it, each timed:

- ``ok``: every call answered (the change did not matter to them);
- ``refused``: a call raised a jaxport error (typed) and ``check`` failed the directory;
- ``untyped:<type>``: a call raised another exception (a bug);
- ``slow:<call>``: a call took longer than :data:`BOUND_S` (a bug);
- ``unchecked``: ``load_generator`` refused it but ``jaxport check`` passed it (a bug; a call may refuse
  what check passes: a template that refuses the test's conversation);
- ``died``: the process died (counted by the parent).

Run as ``python -m tests.fuzz.generative SOURCE WORK START COUNT SEED`` it prints one outcome a line, so
that a parent counts the deaths of the process too (:func:`campaign_in_children`).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fuzz.mutations import mutate

#: The most seconds any one call may take (the template's bound is 5 s; a load here takes about 1 s).
BOUND_S = 30.0

_NESTED = "{% for i in range(99999) %}{% for j in range(99999) %}BODY{% endfor %}{% endfor %}"
TEMPLATES = (
    _NESTED.replace("BODY", ""), _NESTED.replace("BODY", "x"), "{{ 'x' * 2000000000 }}",
    "{{ 'x' | center(2000000000) }}", "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
    "{% macro f() %}{% for i in range(9) %}{{ f() }}{% endfor %}{% endmacro %}{{ f() }}",
    "{% for m in messages %}", "{{ raise_exception('no') }}", "{{ messages.__class__.__mro__ }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}", "{{ (messages * 99999999) | length }}",
    "{% set x = [] %}{% for i in range(99999) %}{% set _ = x.append(i) %}{% endfor %}", "{{ 1/0 }}",
    "{{ lipsum(99999, True, 99999, 99999) }}", "{{ range(10**9) | list | length }}", "{{ '%s' % ('x' * 10**9) }}",
)
TOKENIZERS = (
    b"", b"{", b"[]", b'{"model": 3}', b"[" * 100000 + b"]" * 100000, b'{"version": "1.0", "model": {"type": "BPE"}}',
    b'{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [], "normalizer": null, '
    b'"pre_tokenizer": null, "post_processor": null, "decoder": null, "model": {"type": "WordLevel", '
    b'"vocab": {"a": 0}, "unk_token": "zz"}}', bytes(range(256)) * 64,
)


def _leaf(generation: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    leaves: list[dict[str, Any]] = generation["cache"]["leaves"]
    leaf: dict[str, Any] = rng.choice(leaves)
    return leaf


def _longer(generation: dict[str, Any], length: int) -> None:
    """The cache's length changed with every leaf's (a consistent manifest, which the functions refuse)."""
    generation["cache"]["max_length"] = length
    for leaf in generation["cache"]["leaves"]:
        if leaf.get("sequence_axis") is not None:
            leaf["shape"][leaf["sequence_axis"]] = length


_SPECS: tuple[tuple[str, Callable[[dict[str, Any], random.Random], object]], ...] = (
    ("eos outside", lambda g, r: g.__setitem__("eos_ids", [r.choice([-1, g["vocab_size"], 2 ** 40])])),
    ("pad outside", lambda g, r: g.__setitem__("pad_id", r.choice([-5, g["vocab_size"] + 1]))),
    ("eos not ints", lambda g, r: g.__setitem__("eos_ids", r.choice([["1"], [1.5], None, {"a": 1}, [True]]))),
    ("vocab changed", lambda g, r: g.__setitem__("vocab_size", r.choice([0, 1, 7, 10 ** 12, -3]))),
    ("length changed", lambda g, r: g["cache"].__setitem__("max_length", r.choice([0, 1, 3, 10 ** 9, -1, "8"]))),
    ("leaf shape", lambda g, r: _leaf(g, r).__setitem__("shape", r.choice([[], [1], [10 ** 9, 2], ["b", "x", 3]]))),
    ("leaf dtype", lambda g, r: _leaf(g, r).__setitem__("dtype", r.choice(["float8", "int4", "", "object"]))),
    ("leaf axes", lambda g, r: _leaf(g, r).update({k: r.choice([-1, 7, None, "0"]) for k in list(_leaf(g, r))
                                                   if "axis" in k})),
    ("leaf removed", lambda g, r: g["cache"]["leaves"].pop(r.randrange(len(g["cache"]["leaves"])))),
    ("functions swapped", lambda g, r: (g["prefill"].__setitem__("function", "decode"),
                                        g["decode"].__setitem__("function", "prefill"))),
    ("function unknown", lambda g, r: g["prefill"].__setitem__("function", "nope")),
    ("inputs changed", lambda g, r: g["decode"].__setitem__("inputs", r.choice([[], ["tokens"], ["cache", "tokens"],
                                                                                ["mask", "x"]]))),
    ("length and leaves", lambda g, r: _longer(g, r.choice([17, 4096, 10 ** 8]))),
    ("init changed", lambda g, r: g["cache"].__setitem__("init", "ones")),
    ("tokenizer path", lambda g, r: g.__setitem__("tokenizer", {"file": r.choice(["../x", "/etc/passwd", "nope"])})),
    ("template type", lambda g, r: g.__setitem__("chat_template", r.choice([3, None, ["x"]]))),
)


def _manifest_of(root: Path) -> Path:
    for place in (root / "manifest.json", *root.rglob("manifest.json")):
        if place.exists() and "generation" in json.loads(place.read_text()):
            return place
    raise FileNotFoundError(f"no manifest with a generation table under {root}")


def _reseal(root: Path, manifest: dict[str, Any], files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (root / name).write_bytes(data)
        manifest["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def hostile(source: Path, out: Path, seed: int, index: int) -> str:
    """The ``index``-th hostile copy of ``source`` at ``out``; what was done, in a few words."""
    rng = random.Random(seed * 1_000_003 + index)
    shutil.copytree(source, out)
    place = _manifest_of(out)
    manifest = json.loads(place.read_text())
    generation = manifest["generation"]
    kind = rng.choice(("spec", "spec", "tokenizer", "template", "template", "genai", "damage"))
    what = kind
    if kind == "spec":
        name, change = rng.choice(_SPECS)
        change(generation, rng)
        what = f"spec: {name}"
    elif kind == "tokenizer":
        blob = rng.choice(TOKENIZERS)
        if rng.random() < 0.3:
            original = (out / generation["tokenizer"]["file"]).read_bytes()
            blob = original[: rng.randrange(len(original))]
        _reseal(out, manifest, {generation["tokenizer"]["file"]: blob})
        what = f"tokenizer: {blob[:24]!r}"
    elif kind == "template":
        template = rng.choice(TEMPLATES)
        generation["chat_template"] = template
        what = f"template: {template[:40]}"
    elif kind == "genai" and (out / "genai_config.json").exists():
        config = json.loads((out / "genai_config.json").read_text())
        blob = rng.choice([b"{", b"[]", json.dumps({"model": {"context_length": -1}}).encode(),
                           mutate(json.dumps(config).encode(), rng, b"{}")])
        _reseal(out, manifest, {"genai_config.json": blob})
        what = f"genai: {blob[:24]!r}"
    else:
        names = [p for p in out.rglob("*") if p.is_file() and p.stat().st_size < (8 << 20)]
        victim = rng.choice(names)
        victim.write_bytes(mutate(victim.read_bytes(), rng, b"{}"))
        what = f"damage: {victim.relative_to(out)}"
        if victim == place:
            return what
    place.write_text(json.dumps(manifest))
    return what


def _timed(name: str, call: Callable[[], Any], slow: list[str]) -> Any:
    started = time.monotonic()
    try:
        return call()
    finally:
        if time.monotonic() - started > BOUND_S:
            slow.append(name)


def outcome(root: Path) -> str:
    """Loads ``root`` as a generator, generates and chats with it, checks it (see the module's text)."""
    import jaxport
    from jaxport.application.cli.main import main
    from jaxport.errors import JaxportError

    slow: list[str] = []
    refused, loaded = False, False
    try:
        generator = _timed("load_generator", lambda: jaxport.load_generator(root), slow)
        loaded = True
        _timed("generate", lambda: generator.generate("the cat", 3), slow)
        _timed("generate ids", lambda: generator.generate([1, 2], 3), slow)
        _timed("chat", lambda: generator.chat([{"role": "user", "content": "the dog"}], 3), slow)
    except JaxportError:
        refused = True
    except Exception as exc:  # what the campaign looks for
        return f"untyped:{type(exc).__module__}.{type(exc).__name__}"
    with contextlib.redirect_stdout(io.StringIO()):
        status = _timed("check", lambda: main(["check", str(root)]), slow)
    if slow:
        return f"slow:{slow[0]}"
    if refused and not loaded and status == 0:  # check must refuse what a load refuses
        return "unchecked"
    return "refused" if refused else "ok"


def source_directories(root: Path, *, onnx: bool = True) -> list[Path]:
    """The generative bundle (a tokenizer, a chat template) and (``onnx``) its ONNX conversion, under ``root``."""
    import jaxport
    from tests.helpers import gpt_model as gpt

    root.mkdir(parents=True, exist_ok=True)
    tokenizer = gpt.tiny_tokenizer(root / "tokenizer.json")
    bundle = gpt.save(root / "bundle", tokenizer=str(tokenizer), chat_template=gpt.CHAT_TEMPLATE)
    if not onnx:
        return [bundle]
    jaxport.to_onnx(bundle, root / "onnx")
    return [bundle, root / "onnx"]


def campaign_in_children(source: Path, work: Path, count: int, seed: int,
                         timeout: float = 3600.0) -> collections.Counter[str]:
    """The outcomes of ``count`` hostile copies of ``source``, each in a child restarted when one dies."""
    counts: collections.Counter[str] = collections.Counter()
    start = 0
    while start < count:
        done = subprocess.run([sys.executable, "-m", __name__, str(source), str(work), str(start), str(count),
                               str(seed)], capture_output=True, text=True, timeout=timeout, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith("outcome ")]
        counts.update(line.split()[2] for line in lines)
        if os.environ.get("JAXPORT_FUZZ_DEBUG"):
            for line in lines:
                if line.split()[2] not in ("ok", "refused"):
                    print(line, file=sys.stderr)
        start += len(lines)
        if done.returncode != 0:
            counts["died"] += 1
            start += 1
            if os.environ.get("JAXPORT_FUZZ_DEBUG"):
                print(f"died at {start} ({done.returncode}): {done.stderr[-600:]}", file=sys.stderr)
    return counts


def _main(argv: list[str]) -> None:
    source, work = Path(argv[0]), Path(argv[1])
    start, count, seed = int(argv[2]), int(argv[3]), int(argv[4])
    for index in range(start, count):
        out = work / f"hostile-{index}"
        shutil.rmtree(out, ignore_errors=True)
        what = hostile(source, out, seed, index)
        found = outcome(out)
        print(f"outcome {index} {found} {what}", flush=True)
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("JAXPORT_CACHE_DIR", "")
    _main(sys.argv[1:])
