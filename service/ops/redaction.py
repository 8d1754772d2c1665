"""What no log line shows: seat tokens, API keys, ``authorization`` headers.

:class:`RedactSecrets` is a filter on the process's log handler
(:func:`service.ops.telemetry.configure_logging`), so it sees every record of
every logger, the libraries' included (uvicorn, hpack, grpc, asyncio,
OpenTelemetry, httpx): a handler's filters run for every record the handler
is given, whichever logger made it, where a logger's filters would run only
for that logger's own calls. It rewrites the record before any formatter
reads it, so the text and the JSON formats write the same redacted message.

What it recognises:

* ``Bearer <token>`` anywhere;
* the value of an ``authorization``, ``proxy-authorization`` or ``x-api-key``
  header in a dump of headers: ``name: value`` text, the tuples and dicts of
  Python's reprs (``(b'authorization', b'...')``, ``{'x-api-key': '...'}``),
  JSON, protobuf text, grpc's ``_Metadatum(key=..., value=...)``;
* the value of a field named like a credential (``token``, ``seat_token``,
  ``api_key``, ``apiKey``...) when it is quoted: reprs, JSON, keyword arguments;
* a word of the seat tokens' shape (32 base64url characters: ``new_seat_token``
  in service/app/games.py and ``seat_token_of`` in service/app/tenants.py), wherever it is;
* the API keys the operator configured in plain text, wherever they are.

A header block as the HPACK library dumps it (its raw, possibly Huffman-coded
bytes) cannot be read for secrets at all: those arguments are logged as their
length only.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Final

#: What a secret is replaced by.
REDACTED: Final = "[redacted]"

#: Headers whose values are credentials.
_HEADERS: Final = r"(?:proxy-)?authorization|x-api-key"
#: Names a credential goes by in reprs, JSON and keyword arguments.
_FIELDS: Final = _HEADERS + r"|api[-_]?key|seat[-_]?token|token"

#: A quoted value (optionally a bytes literal), escapes included, up to its
#: closing quote.
_VALUE: Final = r"""(?P<open>b?(?P<q>['"]))(?:\\.|(?!(?P=q))[^\\])*(?P=q)"""

#: ``'x-api-key': '...'``, ``(b'authorization', b'...')``, ``token='...'``,
#: ``"seatToken": "..."``, ``token: "..."`` (protobuf text).
_QUOTED: Final = re.compile(
    rf"""(?P<key>(?<![\w-])b?(?P<nq>['"]?)(?:{_FIELDS})(?P=nq)\s*[:=,]\s*){_VALUE}""",
    re.IGNORECASE,
)
#: grpc's metadata items: ``_Metadatum(key='authorization', value='...')``.
_METADATUM: Final = re.compile(
    rf"""(?P<key>key=b?['"](?:{_HEADERS})['"],\s*value=){_VALUE}""", re.IGNORECASE
)
#: ``authorization: Bearer ...`` in a plain-text dump of headers: the rest of
#: the line (a placeholder such as ``Bearer <token>`` in a message is left).
_PLAIN: Final = re.compile(
    rf"(?P<key>(?<![\w-])(?:{_HEADERS})\s*[:=]\s*+)"
    rf"(?!b?['\"]|{re.escape(REDACTED)}|bearer\s+<)[^\r\n]+",
    re.IGNORECASE,
)
#: ``Bearer <token>`` anywhere, up to a space or a quote.
_BEARER: Final = re.compile(
    rf"(?P<key>(?<![\w-])bearer\s+)(?!<|{re.escape(REDACTED)})[^\s'\"\\]+", re.IGNORECASE
)
#: A word of a seat token's length and alphabet.
_TOKEN_SHAPED: Final = re.compile(r"(?<![\w-])[\w-]{32}(?![\w-])", re.ASCII)

#: Loggers (by their first name part) whose arguments may be raw header
#: blocks: ``hpack`` logs every block it decodes or encodes.
_WIRE_DUMPS: Final = frozenset({"hpack"})


def _keep_key(match: re.Match[str]) -> str:
    """The name and separator as they were, the value replaced."""
    closing = match.groupdict().get("q") or ""
    opening = match.groupdict().get("open") or ""
    return f"{match['key']}{opening}{REDACTED}{closing}"


def _token_shaped(match: re.Match[str]) -> str:
    """A seat token is 24 random bytes in base64url, so it mixes upper and
    lower case letters; a word of one case (32 hex digits of a trace id, a
    snake_case name) is left alone. A token lacks one of the cases with a
    probability of about one in ten million, and is then still redacted
    wherever a header or a field names it."""
    word = match[0]
    mixed = any(c.islower() for c in word) and any(c.isupper() for c in word)
    return REDACTED if mixed else word


def _opaque(arg: object) -> object:
    if isinstance(arg, bytes | bytearray | memoryview):
        return f"<{len(arg)} bytes>"
    return arg


class RedactSecrets(logging.Filter):
    """Rewrites each record's message (its arguments substituted), exception
    text and stack with every secret replaced by ``[redacted]``; ``literals``:
    more exact strings to redact (the configured API keys)."""

    def __init__(self, literals: Iterable[str] = ()) -> None:
        super().__init__()
        # Longest first: a key that contains another is replaced whole.
        exact = sorted({s for s in literals if s}, key=len, reverse=True)
        self._literals = re.compile("|".join(map(re.escape, exact))) if exact else None
        self._formatter = logging.Formatter()

    def redact(self, text: str) -> str:
        if self._literals is not None:
            text = self._literals.sub(REDACTED, text)
        text = _QUOTED.sub(_keep_key, text)
        text = _METADATUM.sub(_keep_key, text)
        text = _PLAIN.sub(_keep_key, text)
        text = _BEARER.sub(_keep_key, text)
        return _TOKEN_SHAPED.sub(_token_shaped, text)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.name.partition(".")[0] in _WIRE_DUMPS:
            record.args = tuple(map(_opaque, record.args))
        try:
            message = record.getMessage()
            unformattable = False
        except Exception:
            # Arguments that do not fit the format: logging would print both
            # raw (Handler.handleError), past this filter.
            message = f"{record.msg!r} % {record.args!r}"
            unformattable = True
        redacted = self.redact(message)
        if unformattable or redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            # Formatted here (as Formatter.format would), so that every
            # formatter writes the redacted text.
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True
