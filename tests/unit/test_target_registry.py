"""Every target of the registry reaches every place that names targets: the CLI, the facade, the guide, packaging.

A target is one domain module, one adapter folder and one registry entry
(docs/developers/adding-a-target.md); its public spellings (``jaxport.to_NAME``,
``convert --to NAME``'s help and flags) are listed beside the registry, in
:mod:`jaxport.application.conversion.targets`. These tests fail, naming the
place, when a target is missing from one of them or one of them names a
target the registry lacks.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import re
import tomllib
from pathlib import Path

import pytest

import jaxport
from jaxport.application.cli.main import parser
from jaxport.application.conversion.targets import COMMAND_LINE
from jaxport.domain.targets.registry import TARGETS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _convert_parser() -> argparse.ArgumentParser:
    commands = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    found: argparse.ArgumentParser = commands.choices["convert"]
    return found


def test_the_command_line_lists_exactly_the_registrys_targets_in_its_order() -> None:
    assert list(COMMAND_LINE) == list(TARGETS)


def test_every_target_has_its_adapters_factories_and_a_host_check_has_its_facts() -> None:
    from jaxport.application.target_adapters import ADAPTERS, JAX

    # One entry more than the registry: bundles, run by JAX, which no conversion writes.
    assert [n for n in ADAPTERS if n != JAX] == list(TARGETS) and JAX in ADAPTERS and JAX not in TARGETS
    assert ADAPTERS[JAX].converter is None and ADAPTERS[JAX].runtime is None and ADAPTERS[JAX].steps is not None
    assert [n for n in TARGETS if ADAPTERS[n].converter is None or ADAPTERS[n].runtime is None] == []
    assert [n for n, e in TARGETS.items() if (e.plan.check_host is None) != (ADAPTERS[n].host_facts is None)] == []


@pytest.mark.parametrize("name", list(TARGETS))
def test_convert_help_describes_the_target_and_offers_its_flags(name: str) -> None:
    entry, line = TARGETS[name], COMMAND_LINE[name]
    assert f"(needs pip install 'jaxport[{entry.extra}]')" in line.summary
    convert = _convert_parser()
    assert f"{name} {line.summary}" in (convert.description or "")
    by_flag = {s: a for a in convert._actions for s in a.option_strings}
    fields = {f.name for f in dataclasses.fields(entry.options)}
    for flag in line.flags:
        assert flag.field in fields, f"{flag.flag} sets {flag.field}, which {entry.options.__name__} lacks"
        action = by_flag[flag.flag]
        assert action.dest == flag.dest and f"{name}: {flag.help}" in (action.help or "")


@pytest.mark.parametrize("name", list(TARGETS))
def test_the_facade_has_the_targets_function_and_options_class(name: str) -> None:
    entry = TARGETS[name]
    assert jaxport.TARGETS is TARGETS and "TARGETS" in jaxport.__all__
    function = getattr(jaxport, f"to_{name}")
    assert f"to_{name}" in jaxport.__all__
    assert (function.__doc__ or "").startswith(f'``convert(source, path, to="{name}", ...)``')
    keywords = {p.name for p in inspect.signature(function).parameters.values() if p.kind is p.KEYWORD_ONLY}
    # Each field of the options is a keyword of to_NAME (dims, calibration and overwrite are convert's own).
    assert keywords - {"dims", "overwrite", "calibration"} == {f.name for f in dataclasses.fields(entry.options)}
    assert getattr(jaxport, entry.options.__name__) is entry.options
    assert entry.options.__name__ in jaxport.__all__


def test_the_facade_has_no_to_function_for_a_target_the_registry_lacks() -> None:
    assert sorted(n for n in jaxport.__all__ if n.startswith("to_")) == sorted(f"to_{n}" for n in TARGETS)


@pytest.mark.parametrize("name", list(TARGETS))
def test_the_guides_index_links_the_targets_page(name: str) -> None:
    # The target's page is the one that shows jaxport.convert(..., to="NAME").
    linked = re.findall(r"\]\(([\w-]+\.md)\)", (DOCS / "index.md").read_text(encoding="utf-8"))
    pages = [page for page in linked if f'to="{name}"' in (DOCS / page).read_text(encoding="utf-8")]
    assert pages, f"docs/index.md links no page that shows to={name!r}"


@pytest.mark.parametrize("name", list(TARGETS))
def test_the_command_reference_has_the_targets_row_with_its_flags(name: str) -> None:
    rows = [line for line in (DOCS / "cli.md").read_text(encoding="utf-8").splitlines()
            if line.startswith(f"| `jaxport convert SOURCE --to {name} ")]
    assert len(rows) == 1, f"docs/cli.md's table has {len(rows)} rows for --to {name}"
    assert [f.flag for f in COMMAND_LINE[name].flags if f.flag not in rows[0]] == []


@pytest.mark.parametrize("name", list(TARGETS))
def test_the_targets_extra_and_adapter_folder_are_packaged(name: str) -> None:
    entry = TARGETS[name]
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert entry.extra in config["project"]["optional-dependencies"]
    assert f"jaxport.adapters.{name}" in config["tool"]["setuptools"]["packages"]
    installs = re.findall(r"pip install --quiet \"\.\[([\w,-]+)\]\"", (ROOT / "Makefile").read_text(encoding="utf-8"))
    assert installs and all(entry.extra in extras.split(",") for extras in installs if "dev," in extras), installs


def test_every_file_that_adding_a_target_names_exists_for_every_target() -> None:
    # docs/developers/adding-a-target.md is true of the targets there are: each src/ path it names
    # (with NAME the target's name) and each file it says a new target edits exists.
    page = (DOCS / "developers" / "adding-a-target.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:src|tests|docs)/[\w/.-]+|pyproject\.toml|Makefile|CHANGELOG\.md)`", page))
    paths = {p.replace("NAME", name) for p in named if p.startswith("src/") or "NAME" not in p
             for name in TARGETS if "PAGE" not in p}
    assert len(paths) > 10 and sorted(p for p in paths if not (ROOT / p).exists()) == []


@pytest.mark.parametrize("name", list(TARGETS))
def test_each_entry_reads_its_plan_and_options_from_its_own_domain_module(name: str) -> None:
    # The registry names the module, so that loading a directory imports no other target's.
    entry = TARGETS[name]
    module = importlib.import_module(entry.domain)
    assert entry.domain == f"jaxport.domain.targets.{name}"
    assert entry.plan is module.PLAN and entry.options is getattr(module, entry.options_class)
    if name == "savedmodel":
        assert entry.manifest_dir == module.JAXPORT_DIR


#: What reads as a branch on a target's name: a model's or manifest's ``target`` compared with a name or a
#: collection of names, an entry's name compared with one, or a name compared with a ``target``.
_BRANCH = re.compile(r"""\.target\s*(?:==|!=)\s*['"](?P<a>\w+)['"]|\.target\s+(?:not\s+)?in\s*[(\[{]"""
                     r"""|\bentry\.name\s*(?:==|!=)\s*['"]|['"](?P<b>\w+)['"]\s*(?:==|!=)\s*[\w.]*\.target\b""")
#: Where a target's name is the subject: the tables and the domain's target modules. And ``load_iree``'s own
#: check that its directory is IREE's (a consumer's runtime and an extra's name are not targets).
_TABLES = ("application/target_adapters.py", "domain/targets/")
_ALLOWED = {("application/conversion/api.py", 'if directory.manifest.target != "iree":')}


def test_no_module_outside_the_target_tables_branches_on_a_targets_name() -> None:
    from jaxport.application.target_adapters import ADAPTERS

    src = ROOT / "src"
    found = []
    for path in sorted(src.rglob("*.py")):
        where = path.relative_to(src).as_posix()
        if where.startswith(_TABLES):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = _BRANCH.search(line)
            named = match and (match["a"] or match["b"])
            if match and (named is None or named in ADAPTERS) and (where, line.strip()) not in _ALLOWED:
                found.append(f"src/{where}:{number}: {line.strip()}")
    assert found == [], "ask the target's entry (application/target_adapters.py) instead:\n" + "\n".join(found)


def test_the_branch_finder_finds_the_branches_it_forbids() -> None:
    forbidden = ['if model.target == "iree":', "if converted.target in ('litert', 'onnx'):",
                 'if entry.name == "onnx":', 'if "savedmodel" != manifest.target:']
    assert all(_BRANCH.search(line) for line in forbidden)
    assert not _BRANCH.search('if self.target == MOSAIC_TARGET:') and not _BRANCH.search('if exc.extra == "litert":')
