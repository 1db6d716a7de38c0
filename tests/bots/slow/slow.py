"""sample_bots/random_bot.py, 40 ms slower per action: a match lasts long enough to be cut
mid-way (tests/test_workers.py). random_bot.py is copied beside it by the test."""

import sys
import time

import random_bot

_send = random_bot.send


def send(sock, obj):
    if obj.get("type") == "action":
        time.sleep(0.04)
    _send(sock, obj)


random_bot.send = send
sys.exit(random_bot.main())
