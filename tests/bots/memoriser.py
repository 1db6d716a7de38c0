#!/usr/bin/env python3
"""A bot that remembers every Écarté hand it is dealt, to cheat at duplicate twins (standard
library only; used by tests/test_twins.py).

In a duplicate pair the second match deals the packs of the first with the seats swapped, so
at deal *n* of the second half the opponent holds the hand this bot held at deal *n* of the
first. The bot stores each hand it is dealt, keyed by (opponent, the cards of the draw for first
dealer, deal number, turn-up) (the draw comes from the same seed, so it fingerprints the pack
sequence of a match and its twin), in
memory **and** in every file it can write (``memory.jsonl`` in its directory, and when sandboxed
in ``/tmp`` and ``$HOME``), reloading them when it looks a hand up. When a deal's key matches a stored hand that
shares no card with its own and is not the turn-up, it takes that hand as the opponent's:

* it never exchanges (plays as dealt as elder, refuses as dealer) when perfect play of the
  known hands takes 3 tricks or more, and otherwise proposes or accepts;
* until an exchange changes the hands, it plays every card by a full search of the tricks
  (both hands known, ecarte.md §E5 obligations).

Without such knowledge it plays a plain heuristic: propose and accept, discard plain cards
below the king, follow with the cheapest winning card, lead its highest card. Every guess is
written to stderr (``GUESS <match_id> <deal> <cards>``), so that a test can check it against the
match log; a guess that a card played contradicts is dropped. Without a guess its play is
exactly the heuristic's.
"""

import functools
import json
import os
import socket
import sys

ORDER = "789TAJQK"  # Écarté rank, low to high (§E1)
# sandboxed (stdio) it writes wherever it can; unsandboxed it keeps to its own directory, so that
# a test run leaves nothing behind in the real /tmp or $HOME
SANDBOXED = os.environ.get("ARENA_TRANSPORT") == "stdio"
FILES = ["memory.jsonl"] + (["/tmp/memory.jsonl", os.path.join(os.environ.get("HOME", "/tmp"), "m.jsonl")]
                            if SANDBOXED else [])


def beats(card, led, trump):
    """True if ``card`` played on ``led`` wins the trick against it (§E5)."""
    if card[1] == led[1]:
        return ORDER.index(card[0]) > ORDER.index(led[0])
    return card[1] == trump


def follow_legal(hand, led, trump):
    """The cards ``hand`` may play on ``led`` (§E5.1-§E5.3)."""
    same = [c for c in hand if c[1] == led[1]]
    if same:
        higher = [c for c in same if ORDER.index(c[0]) > ORDER.index(led[0])]
        return higher or same
    trumps = [c for c in hand if c[1] == trump]
    return trumps or list(hand)


@functools.lru_cache(maxsize=200_000)
def best(mine, theirs, i_lead, led, trump):
    """(tricks I take from here, card to play) with both hands known and best play by both.
    ``led`` is the opponent's card on the table when I follow, else None."""
    if not mine and not theirs:
        return 0, None
    if led is not None:  # I follow
        options = []
        for c in follow_legal(mine, led, trump):
            won = beats(c, led, trump)
            rest, _ = best(tuple(x for x in mine if x != c), theirs, won, None, trump)
            options.append((rest + won, c))
        return max(options)
    if i_lead:
        options = []
        for c in mine:
            rest_mine = tuple(x for x in mine if x != c)
            replies = []
            for r in follow_legal(theirs, c, trump):
                they_win = beats(r, c, trump)
                rest, _ = best(rest_mine, tuple(x for x in theirs if x != r), not they_win, None, trump)
                replies.append(rest + (not they_win))
            options.append((min(replies), c))
        return max(options)
    # the opponent leads: it picks the lead that leaves me fewest tricks
    worst = None
    for c in theirs:
        got, _ = best(mine, tuple(x for x in theirs if x != c), False, c, trump)
        worst = got if worst is None else min(worst, got)
    return worst, None


class Memory:
    """Hands dealt, by (opponent, deal, turn-up), in memory and in every writable file."""

    def __init__(self):
        self.hands = {}
        self.load()

    def load(self):
        for path in FILES:
            try:
                with open(path) as fh:
                    for line in fh:
                        key, hand = json.loads(line)
                        self.hands.setdefault(tuple(key), [])
                        if hand not in self.hands[tuple(key)]:
                            self.hands[tuple(key)].append(hand)
            except (OSError, ValueError):
                pass

    def add(self, key, hand):
        self.hands.setdefault(key, []).append(hand)
        for path in FILES:
            try:
                with open(path, "a") as fh:
                    fh.write(json.dumps([list(key), hand]) + "\n")
            except OSError:
                pass

    def opponent_hand(self, key, mine, turn_up):
        """The newest stored hand for ``key`` that could be the opponent's, or None."""
        for attempt in (0, 1):
            for hand in reversed(self.hands.get(key, [])):
                if not set(hand) & set(mine) and turn_up not in hand:
                    return list(hand)
            if attempt == 0:
                self.load()  # another process of this bot may have written it
        return None


class Match:
    def __init__(self, seat, opponent):
        self.seat, self.opponent = seat, opponent
        self.deal, self.turn_up, self.trump = 0, None, None
        self.draw = []  # the cards of the draw for first dealer, both seats
        self.known = None  # the opponent's cards still in hand, while known


def heuristic(decision, legal, state):
    trump = state.get("trump")
    hand = state.get("hand", [])
    if decision == "discard":
        plain = sorted(c for c in hand if c[1] != trump and c[0] != "K")
        for option in legal:
            if sorted(option) == plain:
                return option
        return min((o for o in legal if len(o) == 1), key=lambda o: ORDER.index(o[0][0]), default=legal[0])
    if decision == "play":
        table = state.get("trick") or []
        if table:
            led = table[0]["card"]
            winners = [c for c in legal if beats(c, led, trump)]
            pool = winners or legal
            return min(pool, key=lambda c: (c[1] == trump, ORDER.index(c[0])))
        return max(legal, key=lambda c: (c[1] == trump, ORDER.index(c[0])))
    for preferred in ("propose", "accept", "announce"):
        if preferred in legal:
            return preferred
    return legal[0]


def decide(match, memory, decision, legal, state):
    known, trump = match.known, state.get("trump")
    hand = tuple(state.get("hand", []))
    table = state.get("trick") or []
    if known is not None and decision in ("propose", "respond") and len(known) == len(hand) == 5:
        elder_leads = state.get("elder") == match.seat
        tricks, _ = best(hand, tuple(known), elder_leads, None, trump)
        if decision == "propose":
            return "play" if tricks >= 3 else "propose"
        return "refuse" if tricks >= 3 else "accept"
    if known is not None and decision == "play" and len(known) == len(hand) - (1 if table else 0):
        led = table[0]["card"] if table else None
        _, card = best(hand, tuple(known), True, led, trump)
        if card in legal:
            return card
    return heuristic(decision, legal, state)


def on_event(match, memory, event, match_id):
    kind = event.get("kind")
    if kind == "dealer_draw":
        match.draw += sorted(event.get("cards") or [])
    elif kind == "deal_start":
        match.deal, match.turn_up, match.trump, match.known = event["deal"], event["turn_up"], event["trump"], None
    elif kind == "hand" and event.get("seat") == match.seat:
        key = (match.opponent, "".join(match.draw), match.deal, match.turn_up)
        match.known = memory.opponent_hand(key, event["cards"], match.turn_up)
        if match.known is not None:
            print(f"GUESS {match_id} {match.deal} {','.join(match.known)}", file=sys.stderr, flush=True)
        memory.add(key, event["cards"])
    elif kind == "exchange":
        match.known = None
    elif kind == "play" and event.get("seat") != match.seat and match.known is not None:
        if event["card"] in match.known:
            match.known.remove(event["card"])
        else:
            match.known = None  # a wrong guess (another pack with the same key)


class Stdio:
    def sendall(self, data):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def recv(self, size):
        return os.read(sys.stdin.fileno(), size)


def main():
    if os.environ.get("ARENA_TRANSPORT") == "stdio":
        sock = Stdio()
    else:
        sock = socket.create_connection((os.environ.get("ARENA_HOST", "127.0.0.1"),
                                         int(os.environ.get("ARENA_PORT", "7000"))))
    hello = {"type": "hello", "name": os.environ.get("ARENA_NAME", "memoriser"),
             "token": os.environ.get("ARENA_TOKEN", ""), "protocol": 1, "role": "bot"}
    sock.sendall((json.dumps(hello) + "\n").encode())
    memory, matches, buf = Memory(), {}, b""
    while True:
        data = sock.recv(65536)
        if not data:
            return 0
        *lines, buf = (buf + data).split(b"\n")
        for line in lines:
            msg = json.loads(line) if line.strip() else {}
            kind, match_id = msg.get("type"), msg.get("match_id")
            if kind == "match_start":
                matches[match_id] = Match(msg["seat"], msg["opponent"])
            elif kind == "event" and match_id in matches:
                on_event(matches[match_id], memory, msg["event"], match_id)
            elif kind == "request":
                match = matches.get(match_id) or Match(0, "")
                try:
                    action = decide(match, memory, msg["decision"], msg["legal"], msg.get("state") or {})
                except Exception as exc:  # noqa: BLE001 - a test bot never crashes: first legal action
                    print(f"memoriser: {exc!r}", file=sys.stderr)
                    action = msg["legal"][0]
                sock.sendall((json.dumps({"type": "action", "id": msg["id"], "action": action}) + "\n").encode())
            elif kind == "match_end":
                matches.pop(match_id, None)
            elif kind == "goodbye":
                return 0


if __name__ == "__main__":
    sys.exit(main())
