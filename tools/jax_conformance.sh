#!/usr/bin/env bash
# Run one of JAX's own export test files against jaxport.
#
#   tools/jax_conformance.sh PATH_TO_JAX_REPO [export_test|shape_poly_test|export_serialization_back_compat_test] [PYTEST_ARGS...]
#
# PATH_TO_JAX_REPO is a clone of github.com/jax-ml/jax: a work tree or a bare
# git directory. The test file is read at the newest tag jax-vX.Y.Z at or below
# the JAX version $JAX_VERSION (default: the installed jax's; jax 0.12.0.1 reads
# jax-v0.11.0 where the clone ends there, since the 0.12 sdist ships no tests),
# or at tag $JAX_TAG when given; copied to a temporary folder, and its import of
# jax.export is swapped for jaxport:
#   from jax import export               -> import jaxport as export
#   from jax._src.export import _export  -> import jaxport as _export
# shape_poly_test's `_bounds` helper calls JAX's private decision procedure;
# for jaxport's dimensions it is pointed at their public `bounds()` instead.
# Everything else (test utilities, harnesses, back-compat data) comes from
# the installed jax, which ships them. Runs with this worktree's .venv
# (`make install` first) plus absl-py, installed on first use. Extra
# arguments go to pytest (e.g. -k 'test_poly_binary'). pytest-xdist is used
# (-n 2) only if it is installed; JAXPORT_CONFORMANCE_JOBS overrides the count.
# JAX's files are never copied into this repository.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  sed -n '2,4p' "$0" >&2
  exit 2
fi
REPO=$1
NAME=${2:-export_test}
shift $(( $# >= 2 ? 2 : 1 ))
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${JAXPORT_PYTHON:-$ROOT/.venv/bin/python}

case $NAME in
  export_test|shape_poly_test|export_serialization_back_compat_test) ;;
  *) echo "unknown test file '$NAME': expected export_test, shape_poly_test or export_serialization_back_compat_test" >&2; exit 2 ;;
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
echo "JAX tests of $TAG (JAX ${VERSION:-as tagged}), run against jaxport" >&2

WORK=$(mktemp -d "${TMPDIR:-/tmp}/jaxport-conformance.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# A work tree or a bare git directory: `git -C` reads both.
if ! git -C "$REPO" show "$TAG:tests/$NAME.py" > "$WORK/$NAME.py" 2>"$WORK/git.err"; then
  echo "cannot read $TAG:tests/$NAME.py from '$REPO':" >&2
  cat "$WORK/git.err" >&2
  exit 2
fi

"$PY" - "$WORK/$NAME.py" <<'PYEOF'
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
"$PY" -m pytest "${ARGS[@]}" "$@" "$NAME.py" || status=$?
exit $status
