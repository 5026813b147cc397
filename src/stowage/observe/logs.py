"""Log setup: text or one JSON object per line, each record carrying the request id.

A record's values come from clients (a request's path, a filename, an error quoting its
input): no character of theirs may start a line of its own or reach a terminal as a
control. JSON escapes them; the text format writes each character that is not printable
(``str.isprintable``: control characters, line and paragraph separators, lone surrogates)
as ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``, so a record is one line. A traceback (the
server's own text) follows on lines of its own, each escaped alike and starting with a
tab: a line that does not start with a tab starts a record.
"""

from __future__ import annotations

import contextvars
import json
import logging
import time
from typing import Any, TextIO

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
#: Attributes every LogRecord has; anything else was passed with ``extra=`` and is kept.
_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", ""):
            record.request_id = request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, value in record.__dict__.items():
            if name not in _STANDARD and value not in ("", None):
                out[name] = value
        if record.exc_info:
            out["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
#: What starts each line of a record's traceback in the text format.
CONTINUED = "\t"


def escaped(text: str) -> str:
    """``text`` with each character that is not printable written as its escape."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class TextFormatter(logging.Formatter):
    """Classic lines: the record on one line, a traceback's lines after it (tab first)."""

    def format(self, record: logging.LogRecord) -> str:
        record.message = record.getMessage()
        if self.usesTime():
            record.asctime = self.formatTime(record, self.datefmt)
        lines: list[str] = []
        if record.exc_info:  # formatted here, not read from a cache another handler set
            lines += self.formatException(record.exc_info).split("\n")
        elif record.exc_text:
            lines += record.exc_text.split("\n")
        if record.stack_info:
            lines += self.formatStack(record.stack_info).split("\n")
        head = escaped(self.formatMessage(record))
        return head + "".join(f"\n{CONTINUED}{escaped(line)}" for line in lines)


def configure(level: str, fmt: str, stream: TextIO | None = None) -> None:
    """Root logging for ``stowage serve``: ``fmt`` is ``json`` or ``text``; to stderr
    unless ``stream`` is given."""
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
