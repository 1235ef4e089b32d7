"""``jaxport upgrade OLD NEW``: an artifact written again, sealed, at the newest format version."""

from __future__ import annotations

import argparse
from typing import Any

# What an upgrade runs on (the codec, the verifying process, JAX's version) loads where it runs:
# `jaxport --help` loads none of it (tests/unit/test_purity.py; figures: cli/main.py).


def register(commands: Any, common: argparse.ArgumentParser) -> None:
    """Adds ``upgrade`` to ``commands``."""
    cmd = commands.add_parser(
        "upgrade", parents=[common], help="renew an artifact: write it again, sealed, at the newest format version",
        description="Read an artifact in any layout that jaxport or jax.export ever wrote, including what "
                    "JAX 0.11.1 and later refuse (HLO sharding protos, mapped onto named shardings where "
                    "one places the same slices on the same devices; the legacy in_avals/out_avals vectors; "
                    "abstract devices without a platform; a device count in the 16-bit field), check every "
                    "module in a separate process, and write it again to NEW, sealed, at the format version "
                    "that this jaxport writes on the installed JAX, or, with --consumer, at what that release "
                    "reads. JAX reads an artifact for six months after it was written: an upgraded artifact "
                    "starts a new window. A module's own GSPMD sharding annotations are kept (a note says "
                    "so). What cannot be carried is refused, naming the field and why, and nothing is "
                    "written; NEW is replaced whole or not at all (it may be OLD).")
    cmd.add_argument("old", metavar="OLD", help="the artifact to read")
    cmd.add_argument("new", metavar="NEW", help="where to write the renewed artifact")
    cmd.add_argument("--consumer", metavar="RUNTIME==VERSION",
                     help="write what this release reads (jax==0.9.2, tf==2.21), as save(consumer=...) does")
    cmd.set_defaults(handler=upgrade_file)


def upgrade_file(args: argparse.Namespace) -> int:
    """Upgrades one artifact and prints what was written."""
    from jaxport.application.upgrade.api import upgrade

    print(upgrade(args.old, args.new, consumer=args.consumer))
    return 0
