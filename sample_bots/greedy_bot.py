#!/usr/bin/env python3
"""Greedy sample bot for the Écarté arena, Écarté and Piquet (Python standard library only,
deterministic).

Protocol handling
    Reads ARENA_HOST, ARENA_PORT, ARENA_NAME and ARENA_TOKEN from the environment, connects over
    TCP and sends a ``hello`` line. After that it reads newline-terminated JSON objects, buffering
    partial lines (TCP may split one line over several reads or merge several lines into one).
    Every ``request`` gets exactly one ``action`` line with the request's ``id``; the action is
    always an element of ``legal`` (if the strategy fails on odd input, the first legal action is
    sent). ``event`` messages are used to remember which cards are out of play in the current
    deal; ``error`` is printed to stderr; unknown messages and fields are ignored. The bot exits
    with status 0 on ``goodbye`` or when the server closes the connection.

Strategy (card order in every suit, high to low: K Q J A T 9 8 7)
    propose / respond
        A hand is "strong" when it holds 3+ trumps, or 2 trumps with the K, Q or J of trumps and a
        side king, or when a rough trick count (trump honours, side kings and queens, voids)
        reaches 3. Elder plays without proposing on a strong hand and proposes otherwise; the
        dealer refuses on a strong hand and accepts otherwise.
    discard
        Keeps trumps and kings (and queens when at most two other cards go), discards the rest.
        Elder must discard at least one card: if the whole hand would be kept, the weakest card
        goes. Only subsets in ``legal`` may be sent: the exact set if it is there, else the legal
        set closest to it.
    king
        Always announces.
    play
        Following: the lowest card that wins the trick, else the lowest card. Leading: the highest
        trump when holding 2+ trumps and that trump is the best one still unseen; otherwise a side
        king, or the highest card of the longest side suit.

Piquet strategy (``state.game == "piquet"``; high to low A K Q J T 9 8 7 (6), no trumps)
    discard
        Every card gets a keep score: its rank (aces and kings first), the length of its suit and
        whether that suit is the point, the sequence (tierce, quart, quint...) and the set (trio,
        quatorze of A K Q J T) it belongs to. The weakest card goes, scores are recomputed on the
        rest, and so on. Elder throws at least one card and goes on to his maximum unless the
        next card to go is valuable (a strong hand draws fewer); younger throws only the low
        cards of short suits, up to the talon's size (possibly none). The exact set is sent as
        the legal list spells it.
    look / expose
        Always looks (free information); keeps the rest of the talon hidden.
    play
        Tracks the cards played, its own discards, the exposed and the looked-at talon cards
        still in the talon, and the suits the opponent has shown void. Leading: a sure winner
        if it holds one (the top card of its longest such suit: aces first, then cashed
        winners); otherwise, from its longest suit, the top card if it is an honour, else the
        lowest. Following: the lowest card of the suit that wins the trick, else the lowest card
        of the suit; void: the lowest card (of the shortest suit on a tie), keeping sure
        winners.
"""

import itertools
import json
import os
import socket
import ssl
import sys
import time

RANKS = "789TAJQK"  # low to high: 7 8 9 T A J Q K (the ace ranks between the jack and the ten)
SUITS = "cdhs"


def rank(card):
    return RANKS.index(card[0])


def suit(card):
    return card[1]


def power(card, trump):
    """A total order for 'lowest'/'highest': every trump ranks above every plain card."""
    return rank(card) + (len(RANKS) if suit(card) == trump else 0)


def beats(card, best, trump):
    """True if ``card`` played after ``best`` takes the trick from it."""
    if suit(card) == suit(best):
        return rank(card) > rank(best)
    return suit(card) == trump


def table_cards(state):
    """Cards already on the table in the current trick, in play order."""
    out = []
    for item in state.get("trick") or []:
        card = item.get("card") if isinstance(item, dict) else item
        if isinstance(card, str) and len(card) == 2:
            out.append(card)
    return out


# --------------------------------------------------------------------------- hand strength

TRUMP_VALUE = {"K": 1.0, "Q": 0.9, "J": 0.8, "A": 0.7}  # other trumps: 0.6
SIDE_VALUE = {"K": 0.75, "Q": 0.4, "J": 0.15}


def estimated_tricks(hand, trump):
    trumps = [c for c in hand if suit(c) == trump]
    tricks = sum(TRUMP_VALUE.get(c[0], 0.6) for c in trumps)
    tricks += sum(SIDE_VALUE.get(c[0], 0.0) for c in hand if suit(c) != trump)
    voids = sum(1 for s in SUITS if s != trump and not any(suit(c) == s for c in hand))
    return tricks + 0.25 * min(voids, len(trumps))  # a void lets a spare trump ruff


def strong_hand(hand, trump):
    trumps = [c for c in hand if suit(c) == trump]
    side_kings = [c for c in hand if suit(c) != trump and c[0] == "K"]
    if len(trumps) >= 3:
        return True
    if len(trumps) == 2 and any(c[0] in "KQJ" for c in trumps) and side_kings:
        return True
    return estimated_tricks(hand, trump) >= 3.0


# --------------------------------------------------------------------------- decisions


def choose_discard(hand, trump, legal):
    options = [opt for opt in legal if isinstance(opt, list)]
    out = [c for c in hand if suit(c) != trump and c[0] != "K"]
    non_queens = [c for c in out if c[0] != "Q"]
    if len(non_queens) <= 2:  # few cards go: the queens are worth keeping
        out = non_queens
    if not out and [] not in options:  # elder must discard: the weakest card goes
        out = [min(hand, key=lambda c: power(c, trump))]
    want = set(out)

    def distance(opt):
        # cards that differ from the plan first, then prefer throwing away weaker cards
        return (len(want ^ set(opt)), sum(power(c, trump) for c in opt))

    return min(options, key=distance)


def choose_lead(hand, cards, trump, gone):
    trumps = sorted((c for c in cards if suit(c) == trump), key=rank, reverse=True)
    if len(trumps) >= 2:
        unseen = [r + trump for r in RANKS if r + trump not in gone and r + trump not in hand]
        if not unseen or rank(trumps[0]) > max(rank(c) for c in unseen):
            return trumps[0]
    side = [c for c in cards if suit(c) != trump]
    if not side:
        return trumps[0]
    length = {s: sum(1 for c in side if suit(c) == s) for s in SUITS}
    kings = [c for c in side if c[0] == "K"]
    if kings:
        return max(kings, key=lambda c: (length[suit(c)], SUITS.index(suit(c))))
    longest = max(side, key=lambda c: (length[suit(c)], rank(c), SUITS.index(suit(c))))
    return longest


def choose_play(state, legal, gone):
    trump = state["trump"]
    cards = [c for c in legal if isinstance(c, str)]
    table = table_cards(state)
    if table:
        best = table[0]
        for card in table[1:]:
            if beats(card, best, trump):
                best = card
        winners = [c for c in cards if beats(c, best, trump)]
        return min(winners or cards, key=lambda c: power(c, trump))
    return choose_lead(state.get("hand") or cards, cards, trump, gone)


def decide(decision, legal, state, gone):
    """Pick an action for one request. ``gone`` holds the cards known to be out of play."""
    if state.get("game") == "piquet":
        return decide_piquet(decision, legal, state, gone)
    hand = state.get("hand") or []
    trump = state.get("trump") or ""
    if decision == "propose":
        action = "play" if strong_hand(hand, trump) else "propose"
    elif decision == "respond":
        action = "refuse" if strong_hand(hand, trump) else "accept"
    elif decision == "discard":
        action = choose_discard(hand, trump, legal)
    elif decision == "king":
        action = "announce"
    elif decision == "play":
        action = choose_play(state, legal, gone | {state.get("turn_up")})
    else:
        action = None
    return action if action in legal else legal[0]


# --------------------------------------------------------------------------- Piquet

PQ_RANKS = "6789TJQKA"  # Piquet, low to high: (6) 7 8 9 T J Q K A; no trumps
PQ_SUITS = "cdhs"
PQ_VALUE = {"A": 11, "K": 10, "Q": 10, "J": 10, "T": 10, "9": 9, "8": 8, "7": 7, "6": 6}
PQ_HONOURS = "AKQJT"  # score when led, or when winning a trick as second player
PQ_CARD_KEEP = {"A": 10, "K": 8, "Q": 6, "J": 5, "T": 4, "9": 2, "8": 1, "7": 0, "6": 0}
PQ_RUN_KEEP = {2: 1.5, 3: 5, 4: 6}  # a run of 5+ (quint: 15 points and more) is worth 12
PQ_SET_KEEP = {2: 1.5, 3: 5, 4: 12}  # two, three (trio) or four (quatorze) of A K Q J T
ELDER_KEEP = 12  # elder draws fewer than his maximum only to keep cards scoring this much
YOUNGER_KEEP = 10  # younger throws only cards scoring less than this


def pq_rank(card):
    return PQ_RANKS.index(card[0])


def pq_point_suit(hand):
    """The suit that would be declared for the point: longest, then the higher total."""
    best, best_key = "", (0, 0)
    for s in PQ_SUITS:
        cards = [c for c in hand if c[1] == s]
        key = (len(cards), sum(PQ_VALUE[c[0]] for c in cards))
        if cards and key > best_key:
            best, best_key = s, key
    return best


def pq_run_length(card, hand):
    """Length of the run of consecutive ranks of ``card``'s suit in ``hand`` holding ``card``."""
    ranks = {pq_rank(c) for c in hand if c[1] == card[1]}
    lo = hi = pq_rank(card)
    while lo - 1 in ranks:
        lo -= 1
    while hi + 1 in ranks:
        hi += 1
    return hi - lo + 1


def pq_keep_score(card, hand):
    """How much ``card`` is worth keeping in ``hand``: its rank, the length of its suit (the
    point, and tricks late in the play), the sequence and the set it belongs to."""
    length = sum(1 for c in hand if c[1] == card[1])
    score = PQ_CARD_KEEP[card[0]] + 1.5 * (length - 1)
    if card[1] == pq_point_suit(hand):
        score += 3
    run = pq_run_length(card, hand)
    score += 12 if run >= 5 else PQ_RUN_KEEP.get(run, 0)
    if card[0] in PQ_HONOURS:
        same = sum(1 for c in hand if c[0] == card[0])
        score += PQ_SET_KEEP.get(same, 0)
    return score


def pq_weakest(hand):
    """The card of ``hand`` least worth keeping (ties: the lower rank, then the suit order)."""
    return min(hand, key=lambda c: (pq_keep_score(c, hand), pq_rank(c), PQ_SUITS.index(c[1])))


def pq_plan_discard(hand, smallest, largest, keep_above):
    """Throw the weakest card again and again (scores are recomputed on what is left) until
    ``largest`` cards are gone or, once ``smallest`` are, the weakest left scores at least
    ``keep_above``."""
    kept, out = list(hand), []
    while len(out) < largest and kept:
        card = pq_weakest(kept)
        if len(out) >= smallest and pq_keep_score(card, kept) >= keep_above:
            break
        kept.remove(card)
        out.append(card)
    return out


def pq_choose_discard(state, legal):
    """Elder takes his maximum unless the cards he would throw are worth keeping (at least
    one card goes); younger throws only the low cards of short suits, up to the talon's size."""
    hand = [c for c in state.get("hand") or [] if isinstance(c, str)]
    options = [opt for opt in legal if isinstance(opt, list)]
    sizes = [len(opt) for opt in options]
    elder = state.get("seat") == state.get("elder")
    keep_above = ELDER_KEEP if elder else YOUNGER_KEEP
    want = set(pq_plan_discard(hand, min(sizes), max(sizes), keep_above))
    for opt in options:
        if len(opt) == len(want) and set(opt) == want:
            return opt
    # not offered (odd input): the legal set closest to the plan, throwing weaker cards
    return min(options, key=lambda opt: (len(want ^ set(opt)), sum(pq_keep_score(c, hand) for c in opt)))


class PiquetTable:
    """What greedy knows of the cards during the play of a Piquet deal."""

    def __init__(self, state, gone):
        self.hand = [c for c in state.get("hand") or [] if isinstance(c, str)]
        self.seat = state.get("seat")
        self.opponent = 1 - self.seat if self.seat in (0, 1) else None
        exchanged = state.get("exchanged") or [0, 0]
        younger = state.get("dealer")
        talon_at_deal = (state.get("talon") or 0) + sum(n for n in exchanged if isinstance(n, int))
        ranks = PQ_RANKS if talon_at_deal >= 12 else PQ_RANKS[1:]  # the 36-card pack has sixes
        out = {c for c in gone if isinstance(c, str)}
        out.update(state.get("discards") or [])
        out.update(state.get("exposed") or [])
        if self.seat == state.get("elder") and younger in (0, 1):
            taken = exchanged[younger] if isinstance(exchanged[younger], int) else 0
            out.update((state.get("seen") or [])[taken:])  # seen cards younger did not draw
        mine = set(self.hand)
        self.unknown = {r + s for s in PQ_SUITS for r in ranks} - mine - out
        self.void = {s for s in PQ_SUITS if ("void", self.opponent, s) in gone}

    def sure(self, card):
        """True if ``card`` led now wins the trick: the opponent has no card of its suit, or
        none of the unknown cards of the suit is higher."""
        if card[1] in self.void:
            return True
        return not any(c[1] == card[1] and pq_rank(c) > pq_rank(card) for c in self.unknown)

    def length(self, s):
        return sum(1 for c in self.hand if c[1] == s)

    def suit_key(self, s):
        """Longest suit first, then the higher total."""
        return (self.length(s), sum(PQ_VALUE[c[0]] for c in self.hand if c[1] == s), s)


def pq_choose_lead(table, cards):
    winners = [c for c in cards if table.sure(c)]
    if winners:  # cash a winner, from the longest suit, its top card first
        s = max({c[1] for c in winners}, key=table.suit_key)
        return max((c for c in winners if c[1] == s), key=pq_rank)
    # no sure winner: from the longest suit, an honour on top is led (1 point for the lead,
    # and it drives out the card above it), otherwise the lowest card
    s = max({c[1] for c in cards}, key=table.suit_key)
    suit_cards = sorted((c for c in cards if c[1] == s), key=pq_rank)
    return suit_cards[-1] if suit_cards[-1][0] in PQ_HONOURS else suit_cards[0]


def pq_choose_follow(table, cards, lead):
    same = [c for c in cards if c[1] == lead[1]]
    if same:
        higher = [c for c in same if pq_rank(c) > pq_rank(lead)]
        if higher:  # every trick counts toward the cards (10); an honour scores 1 more
            return min(higher, key=pq_rank)
        return min(same, key=pq_rank)
    # void in the suit led: throw the lowest card (of the shortest suit on a tie), keeping
    # sure winners (measured better than always emptying the shortest suit: that unguards honours)
    spare = [c for c in cards if not table.sure(c)] or cards
    return min(spare, key=lambda c: (pq_rank(c), table.length(c[1]), PQ_SUITS.index(c[1])))


def pq_choose_play(state, legal, gone):
    cards = [c for c in legal if isinstance(c, str)]
    table = PiquetTable(state, gone)
    on_table = table_cards(state)
    if on_table:
        return pq_choose_follow(table, cards, on_table[0])
    return pq_choose_lead(table, cards)


def decide_piquet(decision, legal, state, gone):
    """Pick an action for one Piquet request (piquet.md); always an element of ``legal``."""
    if decision == "discard":
        return pq_choose_discard(state, legal)
    if decision == "look":
        action = "look"  # free information: the cards the opponent may draw
    elif decision == "expose":
        action = "keep"  # turning the rest of the talon up tells elder cards we do not hold
    elif decision == "play":
        action = pq_choose_play(state, legal, gone)
    else:
        action = None
    return action if action in legal else legal[0]


# --------------------------------------------------------------------------- connection


class StdioSocket:
    """The protocol over stdin/stdout (``ARENA_TRANSPORT=stdio``, used when the arena runs the
    bot in a sandbox without network): the same lines, another pipe."""

    def sendall(self, data):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()

    def recv(self, size):
        return os.read(sys.stdin.fileno(), size)

    def settimeout(self, timeout):
        pass


class TLSFailed(Exception):
    """The TLS connection could not be made; the message is the one line to print."""


def tls_address(host, port):
    """(host, port, tls) from ARENA_HOST and ARENA_PORT: TLS when ARENA_TLS is 1 (true, yes,
    on) or ARENA_HOST is written tls://host or tls://host:port (docs/protocol.md §2.1)."""
    tls = os.environ.get("ARENA_TLS", "").strip().lower() in ("1", "true", "yes", "on")
    if host.startswith("tls://"):
        tls, host = True, host[len("tls://"):].rstrip("/")
        if host.startswith("["):  # an IPv6 address: tls://[::1]:7000
            host, _, rest = host[1:].partition("]")
        elif host.count(":") == 1:
            host, _, rest = host.partition(":")
            rest = ":" + rest
        else:
            rest = ""
        if rest and not rest[1:].isdigit():
            raise TLSFailed("ARENA_HOST: the port after the host must be a number, as in tls://host:7000")
        port = int(rest[1:]) if rest else port
    return host, port, tls


def tls_wrap(sock, host, port):
    """``sock`` with TLS (1.2 or later) over it; the server's certificate is checked against
    the CA file ARENA_TLS_CA (default: the system's trust store) and must be for ``host``.
    Raises :class:`TLSFailed` with one line that says what to fix."""
    ca = os.environ.get("ARENA_TLS_CA") or None
    try:
        ctx = ssl.create_default_context(cafile=ca)
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        raise TLSFailed(f"ARENA_TLS_CA={ca}: cannot read it as PEM certificates ({exc})") from None
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        return ctx.wrap_socket(sock, server_hostname=host)
    except ssl.SSLCertVerificationError as exc:
        sock.close()
        raise TLSFailed(f"TLS: the certificate of {host}:{port} was not accepted ({exc.verify_message}): "
                        "set ARENA_TLS_CA to the CA file that signed it, or connect by the name it is for") from None
    except (OSError, ssl.SSLError) as exc:
        sock.close()
        if getattr(exc, "reason", "") in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
            raise TLSFailed(f"TLS: {host}:{port} does not speak TLS: unset ARENA_TLS and drop tls:// for a "
                            "plain port") from None
        raise TLSFailed(f"TLS: the handshake with {host}:{port} failed: {exc}") from None


def connect(host, port, tls=False, attempts=10):
    """Open the TCP connection (with ``tls``, TLS over it), retrying briefly in case the server
    is still starting; with ``ARENA_TRANSPORT=stdio`` speak over stdin/stdout instead."""
    if os.environ.get("ARENA_TRANSPORT") == "stdio":
        return StdioSocket()
    for attempt in range(attempts):
        try:
            sock = socket.create_connection((host, port), timeout=10)
        except OSError as exc:
            if attempt == attempts - 1:
                raise
            print(f"greedy_bot: connect failed ({exc}), retrying", file=sys.stderr)
            time.sleep(0.5)
            continue
        return tls_wrap(sock, host, port) if tls else sock


def send(sock, obj):
    sock.sendall((json.dumps(obj) + "\n").encode("utf-8"))


def messages(sock):
    """Yield every JSON object the server sends, until it closes the connection.

    Bytes are buffered until a whole newline-terminated line is there, so a line split over several
    TCP segments, or several lines in one segment, both work. Bad lines are skipped.
    """
    buf = b""
    while True:
        data = sock.recv(65536)
        if not data:
            return
        *lines, buf = (buf + data).split(b"\n")
        for line in lines:
            try:
                msg = json.loads(line.decode("utf-8")) if line.strip() else None
            except ValueError:
                print(f"greedy_bot: bad line skipped: {line[:200]!r}", file=sys.stderr)
                continue
            if isinstance(msg, dict):
                yield msg


def note_event(gone, event):
    """Remember the cards of this deal that are out of play (played or discarded by us) and,
    as ``("void", seat, suit)`` entries, the suits a seat has shown it lacks (Piquet)."""
    kind = event.get("kind")
    if kind == "deal_start":
        gone.clear()
    elif kind == "play" and isinstance(event.get("card"), str):
        gone.add(event["card"])
    elif kind == "exchange" and isinstance(event.get("discarded"), list):
        gone.update(c for c in event["discarded"] if isinstance(c, str))
    elif kind == "trick" and isinstance(event.get("cards"), list) and event.get("leader") in (0, 1):
        led, followed = (event["cards"] + [None, None])[:2]
        if isinstance(led, str) and isinstance(followed, str) and led[1:] != followed[1:]:
            gone.add(("void", 1 - event["leader"], led[1:]))


def expand_choose(legal):
    """The compact legal form (docs/protocol.md §8.13), asked for at hello: a discard request's
    ``legal`` is ``{"choose": {"from": cards, "min": a, "max": b}}``, every set of a to b cards
    of ``from``. This bot keeps its list-based strategy and expands the description itself, in
    the order the full form lists it (by size, then hand order); a list is returned as it is."""
    if isinstance(legal, dict) and isinstance(legal.get("choose"), dict):
        c = legal["choose"]
        return [list(s) for k in range(c["min"], c["max"] + 1) for s in itertools.combinations(c["from"], k)]
    return legal


def main():
    host = os.environ.get("ARENA_HOST", "127.0.0.1")
    port = int(os.environ.get("ARENA_PORT", "7000"))
    name = os.environ.get("ARENA_NAME", "greedy")
    token = os.environ.get("ARENA_TOKEN", "")
    gone = {}  # match_id -> cards out of play in the current deal

    try:
        host, port, tls = tls_address(host, port)
        sock = connect(host, port, tls)
    except TLSFailed as exc:
        print(f"greedy_bot: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"greedy_bot: cannot connect to {host}:{port}: {exc}", file=sys.stderr)
        return 1
    sock.settimeout(None)  # the server may stay silent for a long time between matches
    try:
        send(sock, {"type": "hello", "name": name, "token": token, "protocol": 1, "role": "bot",
                    "legal": "compact"})
        for msg in messages(sock):
            kind = msg.get("type")
            match_id = str(msg.get("match_id"))
            if kind == "match_start":
                gone[match_id] = set()
            elif kind == "event" and isinstance(msg.get("event"), dict):
                note_event(gone.setdefault(match_id, set()), msg["event"])
            elif kind == "request":
                legal = expand_choose(msg.get("legal"))
                if not isinstance(legal, list) or not legal:
                    print(f"greedy_bot: no legal actions in {msg}", file=sys.stderr)
                    continue
                state = msg.get("state") if isinstance(msg.get("state"), dict) else {}
                try:
                    action = decide(msg.get("decision"), legal, state, gone.get(match_id, set()))
                except Exception as exc:  # noqa: BLE001 - never crash on odd input: play legal[0]
                    print(f"greedy_bot: strategy failed: {exc!r}", file=sys.stderr)
                    action = legal[0]
                send(sock, {"type": "action", "id": msg.get("id"), "action": action})
            elif kind == "match_end":
                gone.pop(match_id, None)
            elif kind == "error":
                print(f"greedy_bot: server error: {msg}", file=sys.stderr)
            elif kind == "goodbye":
                break
    except OSError as exc:
        print(f"greedy_bot: connection lost: {exc}", file=sys.stderr)
    return 0  # goodbye, or the server closed the connection


if __name__ == "__main__":
    sys.exit(main())
