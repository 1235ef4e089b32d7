#!/usr/bin/env bash
# Run one of JAX's own export test files against jaxport.
#
#   tools/jax_conformance.sh PATH_TO_JAX_REPO [export_test|shape_poly_test|export_serialization_back_compat_test|
#                                              export_back_compat_test|pallas/export_back_compat_pallas_test] [PYTEST_ARGS...]
#
# PATH_TO_JAX_REPO is a clone of github.com/jax-ml/jax: a work tree or a bare
# git directory. The test file is read at the newest tag jax-vX.Y.Z at or below
# the JAX version $JAX_VERSION (default: the installed jax's; jax 0.12.1 reads
# jax-v0.11.0 where the clone ends there, as jax 0.12.0.1 did, since the 0.12
# sdists ship no tests), or at tag $JAX_TAG when given; copied to a temporary
# folder, and its import of jax.export is swapped for jaxport:
#   from jax import export               -> import jaxport as export
#   from jax._src.export import _export  -> import jaxport as _export
# shape_poly_test's `_bounds` helper calls JAX's private decision procedure;
# for jaxport's dimensions it is pointed at their public `bounds()` instead.
# The back-compat suites (export_back_compat_test and Pallas's) keep their
# text: a conftest.py in the temporary folder points the `_export` of JAX's
# harness (export_back_compat_test_util) at a shim holding jaxport's export,
# Exported and DisabledSafetyCheck, so every stored module is called through
# jaxport.Exported built from jax.export.Exported's fields.
# JAXPORT_CONFORMANCE_PEER=jax.export runs the file unchanged instead, to count
# what jax.export passes on the same machine.
# Everything else (test utilities, harnesses, back-compat data) comes from
# the installed jax, which ships them; a back-compat data module that the test
# file imports and the installed jax no longer ships (jax 0.12.1 dropped
# pallas/triton_add_one, whose test jax-v0.11.0 skips) is read from the tag
# into the temporary folder and added to the data package's path, for both
# peers alike. Runs with this worktree's .venv
# (`make install` first) plus absl-py, installed on first use. Extra
# arguments go to pytest (e.g. -k 'test_poly_binary'). pytest-xdist is used
# (-n 2) only if it is installed; JAXPORT_CONFORMANCE_JOBS overrides the count.
# JAX's files are never copied into this repository.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  sed -n '2,5p' "$0" >&2
  exit 2
fi
REPO=$1
NAME=${2:-export_test}
shift $(( $# >= 2 ? 2 : 1 ))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${JAXPORT_PYTHON:-$ROOT/.venv/bin/python}

case $NAME in
  export_test|shape_poly_test|export_serialization_back_compat_test) SHIM=text ;;
  export_back_compat_test|pallas/export_back_compat_pallas_test) SHIM=harness ;;
  *) echo "unknown test file '$NAME': expected export_test, shape_poly_test, export_serialization_back_compat_test," \
          "export_back_compat_test or pallas/export_back_compat_pallas_test" >&2; exit 2 ;;
esac
PEER=${JAXPORT_CONFORMANCE_PEER:-jaxport}
case $PEER in
  jaxport) ;;
  jax.export) SHIM=none ;;
  *) echo "JAXPORT_CONFORMANCE_PEER is jaxport or jax.export, not '$PEER'" >&2; exit 2 ;;
esac
if [[ ! -x $PY ]]; then
  echo "no Python at $PY: run 'make install' first (or set JAXPORT_PYTHON)" >&2
  exit 2
fi

if [[ -z ${JAX_TAG:-} ]]; then
  VERSION=${JAX_VERSION:-$("$PY" -c 'import jax; print(jax.__version__)')}
  # The newest tag at or below VERSION, comparing versions as sort -V does.
  JAX_TAG=$( { git -C "$REPO" tag -l 'jax-v[0-9]*' | grep -E '^jax-v[0-9]+(\.[0-9]+)*$'; echo "jax-v$VERSION=" ; } \
             | sed 's/=$/ ~/' | sort -V | sed -n '/ ~$/q;p' | tail -n 1)
  if [[ -z $JAX_TAG ]]; then
    echo "no tag jax-v* at or below $VERSION in '$REPO'" >&2
    exit 2
  fi
fi
TAG=$JAX_TAG
echo "JAX tests of $TAG (JAX ${VERSION:-as tagged}), run against $PEER" >&2

WORK=$(mktemp -d "${TMPDIR:-/tmp}/jaxport-conformance.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
FILE=$(basename "$NAME").py

# A work tree or a bare git directory: `git -C` reads both.
if ! git -C "$REPO" show "$TAG:tests/$NAME.py" > "$WORK/$FILE" 2>"$WORK/git.err"; then
  echo "cannot read $TAG:tests/$NAME.py from '$REPO':" >&2
  cat "$WORK/git.err" >&2
  exit 2
fi

# Back-compat data modules the test file imports that the installed jax lacks: read from the tag, and put on
# the data package's __path__ by conftest.py (the test file stays as it is, for either peer).
DATA=jax/_src/internal_test_util/export_back_compat_test_data
: > "$WORK/conftest.py"
sed -nE 's/^from jax\._src\.internal_test_util\.export_back_compat_test_data(\.([a-z_]+))? import ([A-Za-z0-9_]+)$/\2 \3/p' \
  "$WORK/$FILE" > "$WORK/imports.txt"
"$PY" - "$WORK/imports.txt" > "$WORK/missing.txt" <<'PYEOF'
import importlib.util, sys
for line in open(sys.argv[1], encoding="utf-8"):
    sub, _, mod = line.strip().rpartition(" ")
    package = "jax._src.internal_test_util.export_back_compat_test_data" + (f".{sub}" if sub else "")
    if importlib.util.find_spec(package) is None or importlib.util.find_spec(f"{package}.{mod}") is None:
        print(sub or "_root", mod)
PYEOF
while read -r SUB MOD; do
  mkdir -p "$WORK/tagdata/$SUB"
  PATH_IN_TAG=$DATA$([[ $SUB == _root ]] || echo "/$SUB")/$MOD.py
  git -C "$REPO" show "$TAG:$PATH_IN_TAG" > "$WORK/tagdata/$SUB/$MOD.py"
  echo "$PATH_IN_TAG: not in the installed jax, read from $TAG" >&2
done < "$WORK/missing.txt"
if [[ -d $WORK/tagdata ]]; then
  cat > "$WORK/conftest.py" <<'PYEOF'
"""Adds the tag's back-compat data modules that the installed jax no longer ships to its data packages."""
import importlib
import os

_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tagdata")
for _sub in sorted(os.listdir(_HERE)):
    _name = "jax._src.internal_test_util.export_back_compat_test_data" + ("" if _sub == "_root" else f".{_sub}")
    importlib.import_module(_name).__path__.append(os.path.join(_HERE, _sub))
PYEOF
fi

if [[ $SHIM == harness ]]; then
  cat >> "$WORK/conftest.py" <<'PYEOF'
"""Points JAX's back-compat harness at jaxport: its `_export.export` and `_export.Exported`."""
import collections
import os
import types

import jaxport
from jax._src.internal_test_util import export_back_compat_test_util as bctu

calls = collections.Counter()


def counted(name, function):
    def call(*args, **kwargs):
        calls[name] += 1
        return function(*args, **kwargs)
    return call


bctu._export = types.SimpleNamespace(
    export=counted("jaxport.export", jaxport.export), Exported=counted("jaxport.Exported", jaxport.Exported),
    DisabledSafetyCheck=jaxport.DisabledSafetyCheck)


def pytest_sessionfinish(session):
    with open(os.path.join(os.path.dirname(__file__), "calls.txt"), "a", encoding="utf-8") as file:
        file.writelines(f"{name} {count}\n" for name, count in calls.items())
PYEOF
elif [[ $SHIM == text ]]; then
"$PY" - "$WORK/$FILE" <<'PYEOF'
import re, sys
path = sys.argv[1]
text = open(path, encoding="utf-8").read()
swaps = [
    (r"^from jax import export$", "import jaxport as export"),
    (r"^from jax\._src\.export import _export$", "import jaxport as _export"),
    (r"^  return (shape_poly\._bounds_decision\(e, shape_poly\.BoundsPrecision\.BEST\))$",
     r"  return e.bounds() if hasattr(e, 'bounds') else \1"),
]
done = 0
for pattern, repl in swaps:
    text, n = re.subn(pattern, repl, text, flags=re.M)
    done += n
if done == 0:
    sys.exit(f"{path}: found no import of jax.export to swap")
open(path, "w", encoding="utf-8").write(text)
PYEOF
fi

if ! "$PY" -c "import absl" 2>/dev/null; then
  "$PY" -m pip install --quiet "absl-py>=2.1,<3"
fi

ARGS=(-q -p no:cacheprovider -p no:randomly --rootdir "$WORK")
if "$PY" -c "import xdist" 2>/dev/null; then
  ARGS+=(-n "${JAXPORT_CONFORMANCE_JOBS:-2}")
fi
# The test process writes the verdicts jaxport remembers to the temporary folder.
export JAXPORT_CACHE_DIR="$WORK/verdicts"
cd "$WORK"
status=0
"$PY" -m pytest "${ARGS[@]}" "$@" "$FILE" || status=$?
if [[ -f calls.txt ]]; then  # proof that the harness went through jaxport
  awk '{n[$1] += $2} END {for (k in n) printf "%s called %d times by JAX'"'"'s harness\n", k, n[k]}' calls.txt | sort
fi
exit $status
