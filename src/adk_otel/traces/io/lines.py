"""Lines of a byte stream, bounded: the text half of reading a trace file.

JSON Lines are read one line at a time, so a line is the most the reader
holds; a line longer than the document limit stops the reading. Whitespace
between lines (blank lines, indentation) is skipped in bulk at C speed, and
counted as input without spans: a gigabyte of blank lines, which a megabyte
of gzip holds, stops at the ``without_spans`` limit in a fraction of a
second instead of being looped over line by line.
"""

from __future__ import annotations

import re
from typing import IO

from .limits import mib, over
from .otlp_json import OtlpJsonError

_CHUNK = 1 << 20
_WHITESPACE = re.compile(rb"[ \t\r\n]*")


class NumberedLine(bytes):
    """A line and its number in the file (blank lines are never yielded)."""

    number: int


MIN_UNIT = 1024
"""What a document or message without a span counts as, at least: parsing one
costs microseconds whatever its size, so a flood of tiny empty ones (six
bytes each, millions in a megabyte of gzip) stops after limit / 1 KiB of them."""


class Spanless:
    """How far the input has gone without a span, against the limit."""

    def __init__(self, source: str, limit: int) -> None:
        self._source = source
        self._limit = limit
        self._mark = 0
        self._units = 0
        self._spans_seen = False

    def spans(self, consumed: int) -> None:
        """Spans were found in the input up to ``consumed`` bytes."""
        self._mark = consumed
        self._units = 0
        self._spans_seen = True

    def other_signal(self, consumed: int) -> None:
        """A document of another signal's data (log records, metrics) ended at
        ``consumed``: data, as a span is, not input without any (a collector's
        logs file read beside its traces file holds nothing else)."""
        self._mark = consumed
        self._units = 0

    def check(self, consumed: int) -> None:
        """At the end of a document or message that held no span."""
        self._units += 1
        where = "after the last span" if self._spans_seen else "from the start"
        if consumed - self._mark > self._limit:
            self._stop(f"no span in more than {mib(self._limit)} of input {where}")
        if self._units * MIN_UNIT > self._limit:
            self._stop(f"no span in {self._units} documents or messages in a row {where}")

    def check_run(self, size: int) -> None:
        """Inside a run of whitespace (which a pretty-printed document, still
        to be parsed, may hold some of: only a run is judged here)."""
        if size > self._limit:
            self._stop(f"more than {mib(self._limit)} of blank space, no span in it")

    def _stop(self, what: str) -> None:
        raise OtlpJsonError(over(self._source, what, "without_spans", self._limit))


class BoundedLines:
    """The stream's non-blank lines (with their line end), numbered; ``consumed``
    is how many bytes of the stream the lines yielded so far and the
    whitespace skipped took."""

    def __init__(self, stream: IO[bytes], source: str, max_line: int, spanless: Spanless) -> None:
        self._stream = stream
        self._source = source
        self._max = max_line
        self._spanless = spanless
        self._buffer = b""
        self._pos = 0
        self._number = 1
        self._run = 0  # blank space since the last line
        self.consumed: int = 0

    def __iter__(self) -> BoundedLines:
        return self

    def __next__(self) -> NumberedLine:
        while True:
            buffer, pos = self._buffer, self._pos
            skip_to = _WHITESPACE.match(buffer, pos).end()  # type: ignore[union-attr]
            if skip_to != pos:
                self._number += buffer.count(b"\n", pos, skip_to)
                self.consumed += skip_to - pos
                self._run += skip_to - pos
                self._pos = pos = skip_to
                self._spanless.check_run(self._run)
            end = buffer.find(b"\n", pos)
            if end >= 0:
                line = NumberedLine(buffer[pos : end + 1])
                self._pos = end + 1
            elif pos < len(buffer):  # a line that goes on into the next chunks
                line, self._buffer, self._pos = self._long_line(buffer[pos:], self._number)
            else:
                self._buffer, self._pos = self._stream.read(_CHUNK), 0
                if not self._buffer:
                    raise StopIteration
                continue
            if len(line) > self._max:
                self._too_long(self._number)
            line.number = self._number
            self.consumed += len(line)
            self._number += 1
            self._run = 0
            return line

    def remainder(self, limit: int) -> bytes:
        """The rest of the input as it is, at most ``limit + 1`` bytes (more
        than ``limit``: too long): a document read whole is read in chunks,
        not line by line."""
        parts = [self._buffer[self._pos :]]
        size = len(parts[0])
        self._buffer, self._pos = b"", 0
        while size <= limit:
            chunk = self._stream.read(min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
        self.consumed += size
        return b"".join(parts)

    def _long_line(self, start: bytes, number: int) -> tuple[NumberedLine, bytes, int]:
        """The line beginning with ``start`` (to its end or the input's), the
        chunk it ended in, and where the next line starts in that chunk. Only
        each new chunk is searched: a long line costs its length, once."""
        parts, size = [start], len(start)
        while True:
            chunk = self._stream.read(_CHUNK)
            end = chunk.find(b"\n")
            size += end + 1 if end >= 0 else len(chunk)
            if size > self._max:
                self._too_long(number)
            if end >= 0:
                parts.append(chunk[: end + 1])
                return NumberedLine(b"".join(parts)), chunk, end + 1
            if not chunk:
                return NumberedLine(b"".join(parts)), b"", 0
            parts.append(chunk)

    def _too_long(self, number: int) -> None:
        raise OtlpJsonError(
            over(f"{self._source}: line {number}", "longer than allowed", "document", self._max)
        )
