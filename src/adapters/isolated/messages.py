"""The messages between an isolated child and its parent: JSON lines, each with its bytes.

A message is one line of a JSON object (``json.dumps`` escapes every newline
inside it), followed, when the object has the key ``"bytes"``, by that many
raw bytes: its payload (a module, say), sent without any encoding. No pickle,
no code from the other side. Both sides read and write with these functions.

>>> import io
>>> stream = io.BytesIO()
>>> write_message(stream, {"file": "a.onnx"})
>>> write_message(stream, {"sdy": True}, b"\\x00\\n")
>>> stream.getvalue()
b'{"file": "a.onnx"}\\n{"sdy": true, "bytes": 2}\\n\\x00\\n'
>>> _ = stream.seek(0)
>>> read_message(stream, 10), read_message(stream, 10), read_message(stream, 10)
(({'file': 'a.onnx'}, b''), ({'sdy': True}, b'\\x00\\n'), None)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any, Final

#: The longest line (a JSON header) either side reads.
MAX_LINE: Final = 64 << 20
#: A message's key that gives the size of its payload.
PAYLOAD_KEY: Final = "bytes"

Message = tuple[dict[str, Any], bytes]


def write_message(stream: IO[bytes], header: Mapping[str, Any], payload: bytes = b"") -> None:
    """Writes ``header`` as one JSON line, then ``payload``, and flushes."""
    line = dict(header, **{PAYLOAD_KEY: len(payload)}) if payload else dict(header)
    stream.write(json.dumps(line).encode() + b"\n")
    if payload:
        stream.write(payload)
    stream.flush()


def read_message(stream: IO[bytes], limit: int) -> Message | None:
    """The next message (its header, then its payload), or None at the end of the stream.

    Raises:
        EOFError: the stream ends inside a message.
        ValueError: the line is not a JSON object, or longer than :data:`MAX_LINE`,
            or the payload claims more than ``limit`` bytes.
        RecursionError: the line nests too deeply.
    """
    line = stream.readline(MAX_LINE + 1)
    if not line:
        return None
    if not line.endswith(b"\n"):
        if len(line) > MAX_LINE:
            raise ValueError(f"a line of more than {MAX_LINE} bytes")
        raise EOFError("a line is cut short")
    header = json.loads(line)
    if not isinstance(header, dict):
        raise ValueError("a line that is not a JSON object")
    size = header.pop(PAYLOAD_KEY, 0)
    if not isinstance(size, int) or not 0 <= size <= limit:
        raise ValueError(f"a message of {size!r} bytes, over the limit of {limit}")
    payload = stream.read(size) if size else b""
    if len(payload) != size:
        raise EOFError("a message's bytes are cut short")
    return header, payload
