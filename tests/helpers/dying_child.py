"""A stand-in for the verifying child of a converted directory that dies on its first model file."""

from __future__ import annotations

import json
import os
import signal
import sys

if __name__ == "__main__":
    sys.stdin.read()
    print(json.dumps({"file": "predict.onnx"}), flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
