"""What crosses the wire between the arena and a bot: messages, framing, JSON Schema.

See ``docs/protocol.md`` for the prose specification a bot author implements from.
"""

PROTOCOL_VERSION = 1
