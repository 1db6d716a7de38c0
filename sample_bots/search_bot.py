#!/usr/bin/env python3
"""Search sample bot for the Écarté arena (Python standard library only, deterministic).

A reference bot of real strength: Perfect Information Monte Carlo ("determinized search").

Protocol handling
    The same as the greedy bot: reads ARENA_HOST, ARENA_PORT, ARENA_NAME, ARENA_TOKEN and
    ARENA_BOT_SEED from the environment, connects over TCP (retrying briefly; with
    ``ARENA_TRANSPORT=stdio`` it speaks over stdin/stdout instead), sends ``hello``, then reads
    newline-terminated JSON objects with partial-line buffering. Every ``request`` gets exactly one
    ``action`` with the request's ``id``, always an element of ``legal`` (on any internal error the
    first legal action is sent). The bot exits with status 0 on ``goodbye`` or when the server
    closes the connection, printing its decision timings to stderr.

What it remembers (per match, reset at each ``deal_start``)
    The turn-up, its own discards, every card played, the calls of the deal (to know whether the
    refusal penalty of ecarte.md §E6.2 is at stake), the opponent's king announcement, and what
    the opponent's plays prove under the obligations of §E5: failing to follow makes him void in
    the suit led, failing to beat the card led means he holds no higher card of that suit,
    failing to trump while void means he has no trumps.

Strategy
    Unseen cards = 32 - own hand - turn-up - own discards - cards played. Each determinization
    deals the opponent a hand from the unseen cards that agrees with everything above (an
    announced king of trumps is held until played; a player who played his first card without
    announcing is assumed not to hold it). The remaining unseen cards, shuffled, stand for the
    stock. Every determinized deal is solved exactly: a two-player perfect-information search of
    the remaining tricks under the §E5 obligations, with memoisation and cut-offs (the payoff only
    depends on the number of tricks, monotonically, so the search maximises tricks and the
    payoff is applied to the result).

    The payoff of a deal is not raw points but an estimate of the probability of winning the
    manche from the resulting scores (a small table built from a rough model of deal outcomes),
    plus a tiny points term to break ties. It counts §E6 in full: 1 point for 3-4 tricks, 2 for the
    vole, and the 2-point refusal penalty when the first decision of the deal was "play" by elder
    or "refuse" by the dealer.

    play     Each legal card is scored by the average solved payoff over the sampled opponent
             hands (up to 300, within ~40% of ``time_ms``); the best average is played.
    king     Always announced.
    discard  A handful of candidate discards (keep trumps and kings first, ...) are compared on the
             same sampled opponent hands and stock orders: draw, let the opponent exchange with a
             simple keep-trumps-and-kings policy when he still has to, solve the play.
    propose / respond
             Playing now (with the refusal penalty if it is the first decision) is compared with
             exchanging (best of the top discards, as above). Opponent hands are weighted by what
             his own calls suggest (a proposal hints at a weak hand, playing or refusing at a strong
             one); for "propose" the dealer's answer is modelled by the same strength test.

Deterministic given ARENA_BOT_SEED and the match_id: each match has its own random.Random, and the
number of samples is fixed (the clock only cuts a search short on a very slow machine).
"""

import itertools
import json
import os
import random
import signal
import socket
import ssl
import sys
import time

RANKS = "789TAJQK"  # low to high: 7 8 9 T A J Q K (the ace ranks between the jack and the ten)
SUITS = "cdhs"
ALL_CARDS = (1 << 32) - 1

# --------------------------------------------------------------------------- cards as bits
# A card is a bit index 0..31: suit * 8 + rank, rank 0 = 7 ... 7 = K (Écarté order).
SUIT_MASK = [0xFF << (8 * s) for s in range(4)]
HIGHER = [SUIT_MASK[i >> 3] & ~((2 << i) - 1) for i in range(32)]  # same suit, higher rank


def card_index(card):
    return SUITS.index(card[1]) * 8 + RANKS.index(card[0])


def card_name(i):
    return RANKS[i & 7] + SUITS[i >> 3]


def to_mask(cards):
    m = 0
    for c in cards:
        m |= 1 << card_index(c)
    return m


def bits(mask):
    """The card indices of a mask, low to high."""
    out = []
    while mask:
        b = mask & -mask
        out.append(b.bit_length() - 1)
        mask ^= b
    return out


def popcount(mask):
    return mask.bit_count()


# --------------------------------------------------------------------------- the solver


def _solve(lead, follow, tmask, memo):
    """Most tricks the player on lead can take from here (trick empty, both hands equal size),
    both sides playing perfectly under the obligations of §E5."""
    if not lead:
        return 0
    key = (lead << 32) | follow
    v = memo.get(key)
    if v is not None:
        return v
    n = lead.bit_count()
    best = -1
    m = lead
    while m:
        a = m & -m
        m ^= a
        ai = a.bit_length() - 1
        higher = HIGHER[ai]
        s = follow & SUIT_MASK[ai >> 3]
        if s:
            choices = (s & higher) or s
        else:
            choices = (follow & tmask) or follow
        plain_lead = not (a & tmask)
        rest = lead ^ a
        worst = 99
        c = choices
        while c:
            b = c & -c
            c ^= b
            if b & higher or (plain_lead and b & tmask):
                v = n - 1 - _solve(follow ^ b, rest, tmask, memo)
            else:
                v = 1 + _solve(rest, follow ^ b, tmask, memo)
            if v < worst:
                worst = v
                if worst <= best:
                    break
        if worst > best:
            best = worst
            if best == n:
                break
    memo[key] = best
    return best


def follow_choices(lead_card, hand, trump):
    """The cards of ``hand`` (a mask) legal after ``lead_card`` (an index) was led (§E5)."""
    s = hand & SUIT_MASK[lead_card >> 3]
    if s:
        return (s & HIGHER[lead_card]) or s
    return (hand & SUIT_MASK[trump]) or hand


def follower_wins(lead_card, card, trump):
    if (1 << card) & HIGHER[lead_card]:
        return True
    return (card >> 3) == trump and (lead_card >> 3) != trump


class Solver:
    """Exact perfect-information solver for the tricks left, memoised per trump suit."""

    MEMO_LIMIT = 400_000

    def __init__(self):
        self.memos = [{} for _ in range(4)]

    def _memo(self, trump):
        memo = self.memos[trump]
        if len(memo) > self.MEMO_LIMIT:
            memo.clear()
        return memo

    def lead_tricks(self, lead, follow, trump):
        """Tricks the player on lead takes from an empty trick (hands as masks)."""
        return _solve(lead, follow, SUIT_MASK[trump], self._memo(trump))

    def lead_values(self, me, opp, trump):
        """For each card I may lead: the tricks I take (this one included), opponent replying best."""
        memo = self._memo(trump)
        tmask = SUIT_MASK[trump]
        n = me.bit_count()
        out = {}
        for a in bits(me):
            worst = 99
            for b in bits(follow_choices(a, opp, trump)):
                if follower_wins(a, b, trump):
                    v = n - 1 - _solve(opp ^ (1 << b), me ^ (1 << a), tmask, memo)
                else:
                    v = 1 + _solve(me ^ (1 << a), opp ^ (1 << b), tmask, memo)
                worst = min(worst, v)
            out[a] = worst
        return out

    def follow_values(self, lead_card, me, opp, trump, legal):
        """For each legal reply of mine to ``lead_card`` (already off the opponent's hand ``opp``):
        the tricks I take (this one included)."""
        memo = self._memo(trump)
        tmask = SUIT_MASK[trump]
        n = me.bit_count()
        out = {}
        for b in legal:
            rest = me ^ (1 << b)
            if follower_wins(lead_card, b, trump):
                out[b] = 1 + _solve(rest, opp, tmask, memo)
            else:
                out[b] = n - 1 - _solve(opp, rest, tmask, memo)
        return out


# --------------------------------------------------------------------------- payoffs

# A rough model of one deal (ignoring king points): the winner scores 1 (3-4 tricks) or 2.
DEAL_OUTCOMES = ((1, 0, 0.37), (2, 0, 0.13), (0, 1, 0.37), (0, 2, 0.13))
_WIN = {}


def win_probability(need_me, need_opp):
    """Chance to win the manche when I need ``need_me`` points and the opponent ``need_opp``."""
    if need_me <= 0:
        return 1.0
    if need_opp <= 0:
        return 0.0
    key = (need_me, need_opp)
    if key not in _WIN:
        _WIN[key] = sum(p * win_probability(need_me - a, need_opp - b) for a, b, p in DEAL_OUTCOMES)
    return _WIN[key]


class Payoff:
    """Value of a deal's end for me, from the points each side still needs."""

    def __init__(self, need_me, need_opp):
        self.need_me = need_me
        self.need_opp = need_opp
        self._tables = {}

    def value(self, pts_me, pts_opp):
        return win_probability(self.need_me - pts_me, self.need_opp - pts_opp) + 0.002 * (pts_me - pts_opp)

    def table(self, penalty, king_me=0, king_opp=0):
        """Values indexed by my tricks 0..5. ``penalty``: None, "me" (I played without proposing
        or refused the first proposal) or "opp"."""
        key = (penalty, king_me, king_opp)
        t = self._tables.get(key)
        if t is None:
            t = []
            for mine in range(6):
                if mine >= 3:
                    pts = 2 if mine == 5 or penalty == "opp" else 1
                    t.append(self.value(pts + king_me, king_opp))
                else:
                    pts = 2 if mine == 0 or penalty == "me" else 1
                    t.append(self.value(king_me, pts + king_opp))
            self._tables[key] = t
        return t


# --------------------------------------------------------------------------- heuristics on masks

TRUMP_VALUE = {7: 1.0, 6: 0.9, 5: 0.8, 4: 0.7}  # K Q J A of trumps; other trumps 0.6
SIDE_VALUE = {7: 0.75, 6: 0.4, 5: 0.15}


def strong_hand(hand, trump):
    """The greedy bot's test of a hand worth playing as it is (used to model the opponent)."""
    tm = hand & SUIT_MASK[trump]
    ntr = tm.bit_count()
    if ntr >= 3:
        return True
    side = hand & ~tm
    side_kings = [c for c in bits(side) if c & 7 == 7]
    if ntr == 2 and any((c & 7) >= 5 for c in bits(tm)) and side_kings:
        return True
    est = sum(TRUMP_VALUE.get(c & 7, 0.6) for c in bits(tm))
    est += sum(SIDE_VALUE.get(c & 7, 0.0) for c in bits(side))
    voids = sum(1 for s in range(4) if s != trump and not hand & SUIT_MASK[s])
    return est + 0.25 * min(voids, ntr) >= 3.0


def keep_value(card, hand, trump):
    """How much a card is worth keeping in an exchange."""
    r = card & 7
    if card >> 3 == trump:
        return 20 + r
    if r == 7:
        return 12
    length = (hand & SUIT_MASK[card >> 3]).bit_count()
    if r == 6:
        return 7 + (1 if length >= 2 else 0)
    if r == 5:
        return 3.5
    return r * 0.5 - 0.1 * length


def model_discard(hand, trump, lo, hi):
    """The opponent's exchange model: keep trumps and kings, throw the rest (``lo``..``hi`` cards)."""
    if hi <= 0:
        return 0
    order = sorted(bits(hand), key=lambda c: keep_value(c, hand, trump))
    out = [c for c in order if c >> 3 != trump and c & 7 != 7]
    if len(out) < lo:
        out = order[:lo]
    out = out[:hi]
    m = 0
    for c in out:
        m |= 1 << c
    return m


def discard_candidates(hand, trump, sizes):
    """Candidate discards (masks) for my hand, best-looking first."""
    order = sorted(bits(hand), key=lambda c: (keep_value(c, hand, trump), c))
    cands = []

    def add(cards):
        m = 0
        for c in cards:
            m |= 1 << c
        if popcount(m) in sizes and m not in cands:
            cands.append(m)

    add(bits(model_discard(hand, trump, min(sizes), max(sizes))))
    plain = [c for c in order if c >> 3 != trump]
    add([c for c in plain if c & 7 < 6])  # keep trumps, kings and queens
    add(plain)  # keep only trumps
    for k in sorted(sizes):
        add(order[:k])
    return cands


# --------------------------------------------------------------------------- deal tracking


class DealTracker:
    """What this seat has seen of the current deal, from the events."""

    def __init__(self):
        self.reset()

    def reset(self, event=None):
        event = event or {}
        self.trump = SUITS.index(event["trump"]) if event.get("trump") in tuple(SUITS) else None
        tu = event.get("turn_up")
        self.turn_up = card_index(tu) if isinstance(tu, str) and len(tu) == 2 else None
        self.dealer = event.get("dealer")
        self.elder = event.get("elder")
        self.my_discards = 0
        self.played = 0
        self.plays = {0: 0, 1: 0}  # number of cards played per seat
        self.seat_cards = {0: 0, 1: 0}  # mask of the cards played per seat
        self.calls = []  # (seat, call)
        self.exchanges = {0: [], 1: []}  # seat -> number of cards exchanged, per exchange
        self.announced = {}  # seat -> card index of the announced king
        self.no_cards = {0: 0, 1: 0}  # seat -> cards proven not held
        self.trick = []  # (seat, card index) of the trick in progress

    def note(self, event, me):
        kind = event.get("kind")
        if kind == "deal_start":
            self.reset(event)
        elif kind == "call":
            self.calls.append((event.get("seat"), event.get("call")))
        elif kind == "exchange":
            if event.get("seat") == me and isinstance(event.get("discarded"), list):
                self.my_discards |= to_mask(event["discarded"])
            if event.get("seat") in self.exchanges and isinstance(event.get("count"), int):
                self.exchanges[event["seat"]].append(event["count"])
        elif kind == "king" and event.get("announced"):
            self.announced[event.get("seat")] = card_index(event["card"])
        elif kind == "play":
            seat, card = event.get("seat"), card_index(event["card"])
            self.played |= 1 << card
            if seat in self.plays:
                self.plays[seat] += 1
                self.seat_cards[seat] |= 1 << card
            if len(self.trick) >= 2:
                self.trick = []
            if self.trick and seat in self.no_cards and self.trump is not None:
                self._infer(seat, self.trick[0][1], card)
            self.trick.append((seat, card))
        elif kind == "trick":
            self.trick = []

    def _infer(self, seat, led, card):
        """What a follower's card proves about his hand (he obeys §E5)."""
        led_suit = SUIT_MASK[led >> 3]
        if (1 << card) & led_suit:
            if not (1 << card) & HIGHER[led]:
                self.no_cards[seat] |= HIGHER[led]  # could not beat the card led
        else:
            self.no_cards[seat] |= led_suit  # void in the suit led
            if card >> 3 != self.trump:
                self.no_cards[seat] |= SUIT_MASK[self.trump]  # and no trumps either

    def penalty_seat(self):
        """The seat exposed to the refusal penalty (§E6.2) in this deal, or None."""
        if not self.calls:
            return None
        seat, call = self.calls[0]
        if call == "play":
            return seat
        if call == "propose" and len(self.calls) > 1 and self.calls[1][1] == "refuse":
            return self.calls[1][0]
        return None

    def talk_signal(self, opp):
        """+1 if the opponent ended the talk by playing or refusing (a strong hand), else 0."""
        if self.calls and self.calls[-1][0] == opp and self.calls[-1][1] in ("play", "refuse"):
            return 1
        return 0


# --------------------------------------------------------------------------- the bot


class Context:
    """Everything a decision needs, from the request's state and the tracker."""

    def __init__(self, state, tracker, me):
        self.state = state
        self.me = me
        self.opp = 1 - me
        self.trump = SUITS.index(state["trump"])
        self.hand = to_mask(state["hand"])
        turn_up = to_mask([state["turn_up"]]) if state.get("turn_up") else 0
        self.dealer = state.get("dealer")
        self.elder = state.get("elder")
        self.i_am_elder = self.elder == me
        table = [t for t in state.get("trick") or [] if isinstance(t, dict)]
        self.table = [(t.get("seat"), card_index(t["card"])) for t in table]
        on_table = 0
        for _, c in self.table:
            on_table |= 1 << c
        tr = state.get("tricks") or [0, 0]
        self.tricks_me = tr[me]
        done = tr[0] + tr[1]
        self.opp_n = 5 - done - sum(1 for s, _ in self.table if s == self.opp)
        self.stock = state.get("stock", 0)
        self.proposals = state.get("proposals", 0)
        scores = state.get("scores") or [0, 0]
        target = state.get("target") or 5
        self.payoff = Payoff(target - scores[me], target - scores[self.opp])
        self.unseen = ALL_CARDS & ~(self.hand | turn_up | tracker.my_discards | tracker.played | on_table)
        ktrump = 1 << (self.trump * 8 + 7)
        self.keeper_mask = SUIT_MASK[self.trump] | 0x80808080  # trumps and kings
        self.ktrump = ktrump
        # cards the opponent must hold / cannot hold
        self.must = 0
        if tracker.announced.get(self.opp) == self.trump * 8 + 7 and ktrump & self.unseen:
            self.must = ktrump
        self.excluded = tracker.no_cards.get(self.opp, 0)
        opp_started = tracker.plays.get(self.opp, 0) > 0 or any(s == self.opp for s, _ in self.table)
        self.soft_excluded = 0
        if opp_started and self.opp not in tracker.announced:
            self.soft_excluded = ktrump  # he would have announced it
        self.opp_king_pending = not opp_started and self.opp not in tracker.announced
        pen = tracker.penalty_seat()
        self.penalty = None if pen is None else ("me" if pen == me else "opp")
        self.signal = tracker.talk_signal(self.opp)
        last = tracker.exchanges.get(self.opp) or [5]
        self.opp_keep_min = 5 - last[-1]  # cards he kept at his last exchange
        self.opp_cards_played = tracker.seat_cards.get(self.opp, 0)
        for s, c in self.table:
            if s == self.opp:
                self.opp_cards_played |= 1 << c

    def pools(self):
        """The candidate pools for the opponent's cards, strictest first."""
        free = self.unseen & ~self.must
        return [
            bits(free & ~self.excluded & ~self.soft_excluded),
            bits(free & ~self.excluded),
            bits(free),
        ]

    def sample_opp(self, rng, pools, n=None):
        n = self.opp_n if n is None else n
        k = n - popcount(self.must)
        for pool in pools:
            if len(pool) >= k:
                m = self.must
                for c in rng.sample(pool, k):
                    m |= 1 << c
                return m
        raise ValueError("not enough unseen cards for the opponent's hand")


class SearchBot:
    PLAY_SAMPLES = 300
    DISCARD_SAMPLES = 80
    TALK_SAMPLES = 80
    MIN_SAMPLES = 4
    WEAK_WEIGHT = 0.35  # likelihood of a hand contradicting the opponent's call
    PROPOSE_BIAS = 0.0  # added to the value of exchanging (win-probability units)
    ACCEPT_BIAS = 0.0
    KEEP_WEIGHT = 0.3  # likelihood of a hand holding fewer trumps and kings than he kept

    def __init__(self, seed="0"):
        self.seed = seed
        self.solver = Solver()
        self.rngs = {}
        self.trackers = {}
        self.seats = {}
        self.timing = {}  # decision -> [count, total seconds, max seconds]
        self.samples_used = 0

    # ---------------------------------------------------------------- messages

    def start_match(self, match_id, seat):
        self.rngs[match_id] = random.Random(f"{self.seed}:{match_id}")
        self.trackers[match_id] = DealTracker()
        self.seats[match_id] = seat

    def end_match(self, match_id):
        self.rngs.pop(match_id, None)
        self.trackers.pop(match_id, None)
        self.seats.pop(match_id, None)

    def note_event(self, match_id, event):
        try:
            tracker = self.trackers.setdefault(match_id, DealTracker())
            tracker.note(event, self.seats.get(match_id))
        except Exception as exc:  # noqa: BLE001 - a strange event must not kill the bot
            print(f"search_bot: event not understood: {event!r}: {exc!r}", file=sys.stderr)

    def decide(self, match_id, decision, legal, state, time_ms):
        t0 = time.monotonic()
        try:
            action = self._decide(match_id, decision, legal, state, time_ms, t0)
        except Exception as exc:  # noqa: BLE001 - never crash on odd input: play legal[0]
            print(f"search_bot: strategy failed on {decision}: {exc!r}", file=sys.stderr)
            action = None
        if decision == "discard" and isinstance(action, list):
            if sorted(action) not in [sorted(opt) for opt in legal if isinstance(opt, list)]:
                action = None
        elif action not in legal:
            action = None
        if action is None:
            action = legal[0]
        elapsed = time.monotonic() - t0
        rec = self.timing.setdefault(str(decision), [0, 0.0, 0.0])
        rec[0] += 1
        rec[1] += elapsed
        rec[2] = max(rec[2], elapsed)
        return action

    def timing_report(self):
        parts = []
        total_n, total_t = 0, 0.0
        for name, (n, t, mx) in sorted(self.timing.items()):
            parts.append(f"{name}: n={n} avg={1000 * t / n:.1f}ms max={1000 * mx:.1f}ms")
            total_n += n
            total_t += t
        if total_n:
            parts.append(f"all: n={total_n} avg={1000 * total_t / total_n:.1f}ms")
        return "; ".join(parts)

    # ---------------------------------------------------------------- decisions

    def _decide(self, match_id, decision, legal, state, time_ms, t0):
        if decision == "king":
            return "announce"
        if len(legal) == 1 or state.get("game", "ecarte") != "ecarte":
            return legal[0]
        me = state.get("seat", self.seats.get(match_id))
        if me not in (0, 1):
            return legal[0]
        tracker = self.trackers.setdefault(match_id, DealTracker())
        rng = self.rngs.setdefault(match_id, random.Random(f"{self.seed}:{match_id}"))
        ctx = Context(state, tracker, me)
        budget = max(0.02, min(0.4 * time_ms / 1000.0, 0.8 * time_ms / 1000.0 - 0.1))
        deadline = t0 + budget
        if decision == "play":
            return self.choose_play(ctx, legal, rng, deadline)
        if decision == "discard":
            return self.choose_discard(ctx, legal, rng, deadline)
        if decision == "propose":
            return self.choose_talk(ctx, rng, deadline, proposing=True)
        if decision == "respond":
            return self.choose_talk(ctx, rng, deadline, proposing=False)
        return legal[0]

    def _weight(self, ctx, opp_hand, signal):
        """Likelihood of a sampled opponent hand (as it was at the end of his last exchange) given
        what he did: ``signal`` +1 = his call showed a strong hand, -1 = a weak one, 0 = nothing;
        and the cards he kept at his last exchange were most likely trumps and kings."""
        w = 1.0
        if ctx.opp_keep_min:
            keepers = popcount(opp_hand & ctx.keeper_mask)
            if keepers < ctx.opp_keep_min:
                w *= self.KEEP_WEIGHT
        if signal and (signal > 0) != strong_hand(opp_hand, ctx.trump):
            w *= self.WEAK_WEIGHT
        return w

    def choose_play(self, ctx, legal, rng, deadline):
        trump = ctx.trump
        legal_idx = [card_index(c) for c in legal]
        opp_table = [c for s, c in ctx.table if s == ctx.opp]
        pools = ctx.pools()
        totals = dict.fromkeys(legal_idx, 0.0)
        solver = self.solver
        for i in range(self.PLAY_SAMPLES):
            if i >= self.MIN_SAMPLES and time.monotonic() > deadline:
                break
            opp = ctx.sample_opp(rng, pools)
            # his hand at the end of the talk: what he holds now plus what he played
            w = self._weight(ctx, opp | ctx.opp_cards_played, ctx.signal)
            kopp = 1 if ctx.opp_king_pending and opp & ctx.ktrump else 0
            table = ctx.payoff.table(ctx.penalty, 0, kopp)
            if opp_table:
                vals = solver.follow_values(opp_table[0], ctx.hand, opp, trump, legal_idx)
            else:
                vals = solver.lead_values(ctx.hand, opp, trump)
            for c in legal_idx:
                totals[c] += w * table[min(5, ctx.tricks_me + vals[c])]
            self.samples_used += 1
        best = max(legal_idx, key=lambda c: (totals[c], -legal_idx.index(c)))
        return card_name(best)

    # ---------------------------------------------------------------- exchanges

    def _exchange_value(self, ctx, hand, opp, stock, my_discard, opp_first):
        """Deal value when I discard ``my_discard`` (mask) from ``hand``; draws come from the
        ``stock`` list in order. ``opp_first``: the opponent (elder) exchanges before me with the
        model policy; otherwise, if I am elder, the dealer exchanges after me with it."""
        trump = ctx.trump
        pos = 0
        if opp_first:
            d = model_discard(opp, trump, 1, min(5, len(stock)))
            k = popcount(d)
            opp ^= d
            for c in stock[:k]:
                opp |= 1 << c
            pos = k
        room = len(stock) - pos
        if popcount(my_discard) > room:  # too few cards left: throw only the weakest
            order = sorted(bits(my_discard), key=lambda c: keep_value(c, hand, trump))
            my_discard = 0
            for c in order[:room]:
                my_discard |= 1 << c
        k = popcount(my_discard)
        hand ^= my_discard
        for c in stock[pos : pos + k]:
            hand |= 1 << c
        pos += k
        if ctx.i_am_elder and not opp_first:
            d = model_discard(opp, trump, 0, min(5, len(stock) - pos))
            k = popcount(d)
            opp ^= d
            for c in stock[pos : pos + k]:
                opp |= 1 << c
        return self._deal_value(ctx, hand, opp, None)

    def _deal_value(self, ctx, hand, opp, penalty):
        """Value of playing the whole deal from these hands (elder leads), king points included."""
        kme = 1 if hand & ctx.ktrump else 0
        kopp = 1 if opp & ctx.ktrump else 0
        table = ctx.payoff.table(penalty, kme, kopp)
        if ctx.i_am_elder:
            mine = self.solver.lead_tricks(hand, opp, ctx.trump)
        else:
            mine = 5 - self.solver.lead_tricks(opp, hand, ctx.trump)
        return table[mine]

    def _sample_deal(self, ctx, rng, pools):
        """An opponent hand of five cards and a stock order, from the unseen cards."""
        opp = ctx.sample_opp(rng, pools, 5)
        rest = bits(ctx.unseen & ~opp)
        rng.shuffle(rest)
        return opp, rest[: ctx.stock]

    def choose_discard(self, ctx, legal, rng, deadline):
        options = {}
        for opt in legal:
            if isinstance(opt, list):
                options.setdefault(to_mask(opt), opt)
        sizes = {popcount(m) for m in options}
        cands = [m for m in discard_candidates(ctx.hand, ctx.trump, sizes) if m in options][:7]
        if not cands:
            return legal[0]
        if len(cands) == 1:
            return options[cands[0]]
        totals = [0.0] * len(cands)
        pools = ctx.pools()
        # elder discarding: the dealer accepted, so his hand (before his own exchange) looks weak
        signal = -1 if ctx.i_am_elder else 0
        for i in range(self.DISCARD_SAMPLES):
            if i >= self.MIN_SAMPLES and time.monotonic() > deadline:
                break
            opp, stock = self._sample_deal(ctx, rng, pools)
            w = self._weight(ctx, opp, signal)
            for j, d in enumerate(cands):
                totals[j] += w * self._exchange_value(ctx, ctx.hand, opp, stock, d, False)
            self.samples_used += 1
        best = max(range(len(cands)), key=lambda j: (totals[j], -j))
        return options[cands[best]]

    def choose_talk(self, ctx, rng, deadline, proposing):
        """propose/play (elder) or accept/refuse (dealer): playing now against exchanging."""
        first = ctx.proposals == 0
        trump = ctx.trump
        if proposing:
            sizes = set(range(1, min(5, ctx.stock) + 1))
        else:
            sizes = set(range(0, min(5, max(0, ctx.stock - 1)) + 1))
        cands = discard_candidates(ctx.hand, trump, sizes)[:3] or [0]
        pools = ctx.pools()
        play_total = 0.0
        ex_totals = [0.0] * len(cands)
        wsum = 0.0
        for i in range(self.TALK_SAMPLES):
            if i >= self.MIN_SAMPLES and time.monotonic() > deadline:
                break
            opp, stock = self._sample_deal(ctx, rng, pools)
            if proposing:
                w = self._weight(ctx, opp, 0)
                play_total += w * self._deal_value(ctx, ctx.hand, opp, "me" if first else None)
                if strong_hand(opp, trump):  # the dealer refuses (model)
                    v = w * self._deal_value(ctx, ctx.hand, opp, "opp" if first else None)
                    for j in range(len(cands)):
                        ex_totals[j] += v
                else:
                    for j, d in enumerate(cands):
                        ex_totals[j] += w * self._exchange_value(ctx, ctx.hand, opp, stock, d, False)
            else:
                w = self._weight(ctx, opp, -1)  # he proposed: a weak hand is likelier
                play_total += w * self._deal_value(ctx, ctx.hand, opp, "me" if first else None)
                for j, d in enumerate(cands):
                    ex_totals[j] += w * self._exchange_value(ctx, ctx.hand, opp, stock, d, True)
            wsum += w
            self.samples_used += 1
        wsum = wsum or 1.0
        exchange = max(ex_totals) / wsum
        play_now = play_total / wsum
        if proposing:
            return "propose" if exchange + self.PROPOSE_BIAS > play_now else "play"
        return "accept" if exchange + self.ACCEPT_BIAS > play_now else "refuse"


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
            print(f"search_bot: connect failed ({exc}), retrying", file=sys.stderr)
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
                print(f"search_bot: bad line skipped: {line[:200]!r}", file=sys.stderr)
                continue
            if isinstance(msg, dict):
                yield msg


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
    name = os.environ.get("ARENA_NAME", "search")
    token = os.environ.get("ARENA_TOKEN", "")
    bot = SearchBot(os.environ.get("ARENA_BOT_SEED", "0"))
    matches_done = 0

    def on_sigterm(signum, frame):  # the arena stops its bots with SIGTERM: report, then leave
        print(f"search_bot: timing: {bot.timing_report()}", file=sys.stderr, flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        host, port, tls = tls_address(host, port)
        sock = connect(host, port, tls)
    except TLSFailed as exc:
        print(f"search_bot: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"search_bot: cannot connect to {host}:{port}: {exc}", file=sys.stderr)
        return 1
    sock.settimeout(None)  # the server may stay silent for a long time between matches
    try:
        send(sock, {"type": "hello", "name": name, "token": token, "protocol": 1, "role": "bot",
                    "legal": "compact"})
        for msg in messages(sock):
            kind = msg.get("type")
            match_id = str(msg.get("match_id"))
            if kind == "match_start":
                bot.start_match(match_id, msg.get("seat"))
            elif kind == "event" and isinstance(msg.get("event"), dict):
                bot.note_event(match_id, msg["event"])
            elif kind == "request":
                legal = expand_choose(msg.get("legal"))
                if not isinstance(legal, list) or not legal:
                    print(f"search_bot: no legal actions in {msg}", file=sys.stderr)
                    continue
                state = msg.get("state") if isinstance(msg.get("state"), dict) else {}
                time_ms = msg.get("time_ms")
                time_ms = time_ms if isinstance(time_ms, int) and time_ms > 0 else 2000
                action = bot.decide(match_id, msg.get("decision"), legal, state, time_ms)
                send(sock, {"type": "action", "id": msg.get("id"), "action": action})
            elif kind == "match_end":
                bot.end_match(match_id)
                matches_done += 1
                if matches_done % 20 == 0:
                    report = bot.timing_report()
                    print(f"search_bot: after {matches_done} matches: {report}", file=sys.stderr, flush=True)
            elif kind == "error":
                print(f"search_bot: server error: {msg}", file=sys.stderr)
            elif kind == "goodbye":
                break
    except OSError as exc:
        print(f"search_bot: connection lost: {exc}", file=sys.stderr)
    finally:
        print(f"search_bot: timing: {bot.timing_report()}", file=sys.stderr, flush=True)
    return 0  # goodbye, or the server closed the connection


if __name__ == "__main__":
    sys.exit(main())
