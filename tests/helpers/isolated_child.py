"""An isolated child that does what each request says (echo, crash, hang, answer garbage, spin), for the
tests of the mechanism (tests/adapters/test_isolated.py)."""

from __future__ import annotations

import os
import signal
import sys
import time

from jaxport.adapters.isolated.child import Request, serve


def _handle(request: Request) -> None:
    request.limit()
    what = request.header["do"]
    if what == "echo":
        request.say({"echo": request.header.get("text")}, request.payload)
    elif what == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif what == "hang":
        time.sleep(600)
    elif what == "garbage":
        request.out.write(b"[1, 2]\n")
        request.out.flush()
    elif what == "spin":
        while True:
            pass
    elif what == "exit":
        print("some last words", file=sys.stderr, flush=True)
        sys.exit(7)


if __name__ == "__main__":
    sys.exit(serve(_handle, sys.argv))
