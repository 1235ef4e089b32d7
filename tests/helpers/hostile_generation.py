"""Hostile parts of a generative bundle: a chat template with bombs behind its messages, manifests changed.

:data:`BOMB_TEMPLATE` renders :data:`tests.helpers.gpt_model.CHAT_TEMPLATE` for any conversation but these
first messages: ``spin`` loops for hours without writing (the bound on time stops it), ``loop`` is the same
loop writing ``x`` each time (10^10 characters: the bound on output), ``boom`` asks for 2 GB (the bound on
memory). :func:`changed` rewrites a bundle's manifest (and a file) as a careless or hostile hand would, the
digests of its files made to match.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import gpt_model as gpt

_NESTED = "{% for i in range(99999) %}{% for j in range(99999) %}BODY{% endfor %}{% endfor %}"
BOMB_TEMPLATE = ("{% if messages[0]['content'] == 'spin' %}" + _NESTED.replace("BODY", "")
                 + "{% elif messages[0]['content'] == 'loop' %}" + _NESTED.replace("BODY", "x")
                 + "{% elif messages[0]['content'] == 'boom' %}{{ 'x' * 2000000000 }}"
                 + "{% else %}" + gpt.CHAT_TEMPLATE + "{% endif %}")


def changed(bundle: Path, copy: Path, generation: Callable[[dict[str, Any]], None],
            files: dict[str, bytes] | None = None) -> Path:
    """A copy of ``bundle`` at ``copy`` whose manifest's generation table ``generation`` changed in place,
    and whose ``files`` are replaced (their sizes and SHA-256 written into the manifest)."""
    shutil.copytree(bundle, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    generation(manifest["generation"])
    for name, data in (files or {}).items():
        (copy / name).write_bytes(data)
        manifest["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy
