"""Self-service for bot authors: the policy (:mod:`arena.authors.accounts`: accounts, uploads,
remote bots, test matches, what an author may see), its HTTP routes under ``/author``
(:mod:`arena.authors.pages`, with the test matches' HTML in :mod:`arena.authors.tests_html`) and
the command line's client of them (:mod:`arena.authors.client`).

A layer of its own, above the scheduler it hands uploads and test matches to
(:mod:`arena.schedule.gate`, :mod:`arena.schedule.on_demand`) and below the command line. The
contest's site (:mod:`arena.net.web`, a layer below) does not import it: whoever composes the
server mounts :data:`arena.authors.pages.MOUNTS` (``arena serve`` does)."""
