"""The ``jaxport`` command: export, run, compare and look into artifacts from the shell.

Each subcommand lives in its own module, which registers its arguments and
imports what it needs (JAX included) only when it runs, so that
``jaxport --help`` and ``jaxport inspect`` start without JAX. (Measured with
``-X importtime``, median of three fresh processes on a busy 2-core machine:
the parser's own modules take 0.23 s; importing what the commands run at their
heads would add NumPy's 0.2 s, the record's modules' 0.05 s and JAX's 1.5 s.
The subcommands' function-local imports cite this.) Every error a
user can cause ends the command with one line on stderr and exit status 2;
anything else is a bug in jaxport, reported as such with its traceback and
exit status 70 (``EX_SOFTWARE``). ``--debug`` shows the traceback of either.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from jaxport.adapters.jax.installed import as_missing_jax
from ... import __version__
from . import check, convert, diff, export, generate, inspect_command, mlir, run, serve, upgrade, warm
from .common import is_users_error, one_line

_COMMANDS = (export, convert, run, check, warm, diff, inspect_command, mlir, serve, generate, upgrade)
#: The subcommands that give the user's program or arrays to JAX (see :func:`is_users_error`).
_FEED_JAX = frozenset({"export", "run", "warm"})
#: The exit status of an error that is a bug in jaxport (``EX_SOFTWARE`` of sysexits.h).
BUG_STATUS = 70
BUG_LINE = "jaxport: this is a bug in jaxport; please report it with the traceback below"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``prog: error: ...``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    """The parser of the whole command line, with one subparser per subcommand."""
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the full traceback of an error")
    top = _Parser(prog="jaxport", parents=[debug],
                  description="Export JAX functions to portable StableHLO artifacts, run, "
                              "compare and inspect them.")
    top.add_argument("--version", action="version", version=f"jaxport {__version__}")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                  parser_class=_Parser)
    for command in _COMMANDS:
        command.register(commands, debug)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status.

    0: success; 1: a negative answer (``check`` found a failing artifact,
    ``diff`` differences); 2: the user's mistake (the one line on stderr says
    what and where); 70: a bug in jaxport (stderr says so, then shows the
    traceback); 130: interrupted; 141: the reader of the output went away.
    """
    args = parser().parse_args(argv)
    try:
        status: int = args.handler(args)
    except KeyboardInterrupt:
        print("jaxport: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`jaxport mlir f | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as raised:
        if getattr(args, "debug", False):
            raise
        exc: Exception = as_missing_jax(raised) or raised  # JAX missing or outside its range: say so
        if not _users_error(exc, args):
            print(BUG_LINE, file=sys.stderr)
            traceback.print_exception(exc, file=sys.stderr)
            return BUG_STATUS
        print(f"jaxport {args.command}: {one_line(exc)}", file=sys.stderr)
        return 2
    return status


def _users_error(exc: Exception, args: argparse.Namespace) -> bool:
    """Whether ``exc``, raised by the subcommand of ``args``, is the user's to fix."""
    if args.command == "export" and export.raised_in_target(exc, args.target):
        return True
    return is_users_error(exc, fed_to_jax=args.command in _FEED_JAX)


if __name__ == "__main__":
    sys.exit(main())
