"""The doctor's time limits and sizes (seconds, bytes)."""

from __future__ import annotations

OPPONENT = "doctor-opponent"
CONNECT_TIMEOUT_S = 20.0
"""As in a tournament (docs/protocol.md §3.3): the bot must connect within 20 s."""
TLS_HANDSHAKE_S = 10.0
"""With ``--tls``: how long the bot's TLS handshake with the doctor may take."""
LINGER_S = 3.0
"""After ``goodbye``: how long the bot may stay connected before the doctor closes its side."""
EXIT_WAIT_S = 2.0
"""After the connection is closed: how long the bot may take to exit."""
MATCH_CAP_S = 60.0
"""Upper bound of one scripted match (a bot near the time limit on every move)."""
BURST_BYTES = 1 << 20
"""Unknown-type lines sent between two matches: more than the socket buffers hold, so a bot
that stops reading cannot take them all."""
BURST_TIMEOUT_S = 10.0
RETRY_ROUNDS = 30
RETRY_BUDGET_S = 8.0
"""Extra matches for the exchange situations: at most this many rounds, started within this
many seconds of the first match."""
SNIPPET = 400
"""Longest quote of a wire line in the report (characters)."""
LONG_LINE_BYTES = 256 * 1024
"""The long-line probe: one request padded with an unknown field to this many bytes (newline
included), more than the longest line the arena sends (a full-form Piquet discard request
with 36 cards, about 131 KB), so a bot whose read buffer has a fixed size fails here and not
in a contest."""
