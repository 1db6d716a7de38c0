"""``arena watch``: follow a contest's matches live in the terminal, as a spectator.

The watcher connects to an ``arena serve`` server over TCP (or TLS: ``--tls``, ``ARENA_TLS=1``
or ``--host tls://host:port``, the CA from ``--tls-ca`` or ``ARENA_TLS_CA``; :mod:`arena.net.tls`) like any spectator
(docs/protocol.md): ``hello`` with ``"role": "spectator"``, then ``list`` (answered by
``matches``) and ``subscribe`` to one match id, or to ``"*"`` for every match now and to come.
The server then sends the feed:

* ``watch``: a match begins (or is joined): its players, rules and time control;
* ``spectate``: one public event of a match, live;
* ``reveal``: the hidden events of a finished deal (hands, exchanged cards, the pack, a
  declined king, the talon cards elder looked at), only once they can no longer help a bot;
  for a duplicate pair, only after the twin match is over too;
* ``watch_end``: the match is over.

Everything shown comes from that feed: a card appears only once the feed has made it public
(played, announced, shown as carte blanche or an exposed talon) or revealed it. Nothing is
guessed, except *who is to act*, which is inferred from the order of the public events and
shown as unknown (``?``) while hidden decisions (the exchanges) are being made.

:class:`WatchState` holds the state of every match followed and is pure (no I/O; the clock is
injected), so it is tested without a terminal: feed it the decoded messages with
:meth:`WatchState.apply` and draw it with :meth:`WatchState.render`. :func:`main` is the
network and terminal side: a ``rich.live.Live`` view, or with ``once`` a single snapshot
printed when the first match followed is over.
"""

from arena.tools.watch.client import _watch, main
from arena.tools.watch.state import WatchState

__all__ = ["WatchState", "_watch", "main"]
