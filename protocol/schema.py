"""JSON Schema of the wire protocol, generated from the message structs.

``python -m protocol.schema`` prints one JSON Schema document (draft 2020-12) describing every
line that may cross the wire: :data:`~protocol.messages.ClientMessage` (bot -> server) and
:data:`~protocol.messages.ServerMessage` (server -> bot), with the game events
(:data:`~protocol.messages.GameEvent`, tagged by ``"kind"``) nested inside ``event`` messages.

The output is deterministic (sorted keys, two-space indent, one trailing newline, docstrings
normalised with :func:`inspect.cleandoc` so the Python version does not matter), so the
checked-in copy ``docs/protocol.schema.json`` can be compared byte for byte with
:func:`schema_text`; ``make schema`` regenerates it.
"""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any

import msgspec

from protocol import PROTOCOL_VERSION
from protocol.messages import ClientMessage, ServerMessage

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
REF_TEMPLATE = "#/$defs/{name}"

_TITLE = f"Écarté arena wire protocol, version {PROTOCOL_VERSION}"
_DESCRIPTION = (
    "Every line exchanged between the arena server and a bot: one JSON object per line "
    '(UTF-8, terminated by \\n), selected by its "type" field. A valid line is either a '
    "ClientMessage (bot -> server: hello, action) or a ServerMessage (server -> bot: welcome, "
    "match_start, event, request, match_end, error, goodbye). Game events travel inside "
    '"event" messages and are selected by their "kind" field. The server always sends '
    "every field (null when it has no value); in hello, a field not listed in "
    '"required" may be left out and then takes its "default". Receivers must ignore '
    "unknown fields. Generated from protocol/messages.py by `python -m protocol.schema`; "
    "the prose specification is docs/protocol.md."
)
_UNION_DOCS = {
    "ClientMessage": 'A line sent by a bot to the server, selected by "type".',
    "ServerMessage": 'A line sent by the server to a bot, selected by "type".',
}


def _clean(node: Any) -> Any:
    """Normalise every ``description`` (docstring indentation differs between Python versions)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                out[key] = inspect.cleandoc(value)
            else:
                out[key] = _clean(value)
        return out
    if isinstance(node, list):
        return [_clean(item) for item in node]
    return node


def schema() -> dict[str, Any]:
    """The protocol's JSON Schema document as a dict."""
    (client, server), components = msgspec.json.schema_components(
        [ClientMessage, ServerMessage], ref_template=REF_TEMPLATE
    )
    defs: dict[str, Any] = dict(components)
    for name, union in (("ClientMessage", client), ("ServerMessage", server)):
        if name in defs:  # pragma: no cover - a struct may not shadow a union's name
            raise RuntimeError(f"a struct is named {name}")
        defs[name] = {"title": name, "description": _UNION_DOCS[name], **union}
    cleaned: dict[str, Any] = _clean(
        {
            "$schema": SCHEMA_DIALECT,
            "title": _TITLE,
            "description": _DESCRIPTION,
            "x-protocol-version": PROTOCOL_VERSION,
            "anyOf": [
                {"$ref": REF_TEMPLATE.format(name="ClientMessage")},
                {"$ref": REF_TEMPLATE.format(name="ServerMessage")},
            ],
            "$defs": defs,
        }
    )
    return cleaned


def schema_text() -> str:
    """The schema as the exact text of ``docs/protocol.schema.json``."""
    return json.dumps(schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    """Write :func:`schema_text` to stdout as UTF-8."""
    sys.stdout.buffer.write(schema_text().encode("utf-8"))
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
