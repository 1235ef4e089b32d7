"""The ES module ``jaxport.mjs`` that ``convert --web`` copies into a converted ONNX directory.

The module (``adapters/web/jaxport.mjs``, shipped as package data) is the
same for every model: it reads what it needs of a model from the
directory's manifest.
"""

from __future__ import annotations

import os
import shutil
from importlib import resources

from jaxport.domain.targets.onnx import WEB_MODULE


def module_bytes() -> bytes:
    """The module's source, as the package ships it."""
    return (resources.files("jaxport.adapters") / "web" / WEB_MODULE).read_bytes()


def copy_module(directory: str | os.PathLike[str]) -> str:
    """Writes ``jaxport.mjs`` into ``directory``; returns its name there (for the manifest's files)."""
    with resources.as_file(resources.files("jaxport.adapters") / "web" / WEB_MODULE) as source:
        shutil.copyfile(source, os.path.join(directory, WEB_MODULE))
    return WEB_MODULE
