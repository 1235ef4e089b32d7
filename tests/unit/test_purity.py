"""The domain is pure: importing it loads neither JAX nor NumPy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FORBIDDEN = ("jax", "jaxlib", "numpy", "mlir", "flatbuffers", "ml_dtypes")

PROBE = f"""
import sys, pkgutil, importlib
import jaxport.domain
for info in pkgutil.walk_packages(jaxport.domain.__path__, "jaxport.domain."):
    importlib.import_module(info.name)
roots = {{name.split(".")[0] for name in sys.modules}}
print(sorted(roots & set({FORBIDDEN!r})))
"""


def test_importing_every_domain_module_loads_no_jax_jaxlib_or_numpy() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_importing_jaxport_itself_loads_no_jax() -> None:
    probe = "import sys, jaxport, jaxport.errors; print('jax' in sys.modules, 'jaxlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False", out.stderr


def test_the_layer_check_reports_no_crossing() -> None:
    root = Path(__file__).resolve().parents[2]
    tool = root.parent / "shared" / "tools" / "check_layers.py"
    if not tool.exists():
        import pytest

        pytest.skip(f"{tool} is not beside this checkout")
    out = subprocess.run([sys.executable, str(tool), "--strict", str(root)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


def test_importing_jaxport_loads_none_of_its_modules_and_every_public_name_resolves() -> None:
    # `import jaxport` is cheap: each public name loads its module on first use.
    probe = ("import sys, jaxport\n"
             "eager = sorted(m for m in sys.modules if m.startswith('jaxport.'))\n"
             "missing = [n for n in jaxport.__all__ if getattr(jaxport, n, None) is None]\n"
             "print(eager, missing, sorted(set(jaxport.__all__) - set(dir(jaxport))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] [] []", out.stdout + out.stderr


def test_the_command_line_help_loads_neither_jax_nor_what_only_some_commands_need() -> None:
    probe = ("import sys\n"
             "from jaxport.application.cli.main import main\n"
             "try:\n"
             "    main(['--help'])\n"
             "except SystemExit:\n"
             "    pass\n"
             "print(sorted(m for m in sys.modules if m in ('jax', 'jaxlib', 'numpy',"
             " 'jaxport.domain.artifact.record')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-2000:] + out.stderr
