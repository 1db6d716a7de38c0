"""A sample bot made slower: ``slow.py [MODULE [MS]]`` runs ``sample_bots/MODULE.py`` (default
``random_bot``) and waits MS milliseconds (default 40) before each action it sends. A match then
lasts long enough to be cut mid-way (tests/test_workers.py) or watched in a browser
(tests/test_web.py). `tests.conftest.slow_bots` writes the manifests and copies the
wrapped bot beside this file."""

import importlib
import sys
import time

module = sys.argv[1] if len(sys.argv) > 1 else "random_bot"
delay_s = (float(sys.argv[2]) if len(sys.argv) > 2 else 40.0) / 1000
bot = importlib.import_module(module)
_send = bot.send


def send(sock, obj):
    if obj.get("type") == "action":
        time.sleep(delay_s)
    _send(sock, obj)


bot.send = send
sys.exit(bot.main())
