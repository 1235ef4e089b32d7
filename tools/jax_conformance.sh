#!/usr/bin/env bash
# Run one of JAX's own export test files against jaxport.
#
#   tools/jax_conformance.sh PATH_TO_JAX_REPO [export_test|shape_poly_test|export_serialization_back_compat_test] [PYTEST_ARGS...]
#
# PATH_TO_JAX_REPO is a clone of github.com/jax-ml/jax: a work tree or a bare
# git directory. The test file is read at tag $JAX_TAG (default jax-v0.10.2,
# the installed jax), copied to a temporary folder, and its import of
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
TAG=${JAX_TAG:-jax-v0.10.2}
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
