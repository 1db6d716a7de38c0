"""The scripted opponent the bot plays against."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import trio

from arena.tools.doctor.ecarte import DealPlan, opponent_discard_count
from arena.tools.doctor.wire import Wire
from protocol.framing import LineReader, ProtocolError

RESIGN = "doctor-opponent-resigns"


class Opponent:
    """The scripted opponent: a trio TCP client registered as a second bot. For the first deal
    of a match it follows that match's :class:`DealPlan`; afterwards it plays quickly (no
    exchanges, first legal card), or resigns when ``resign`` says so for that match."""

    def __init__(self, name: str, token: str, port: int, wire: Wire) -> None:
        self.name = name
        self.token = token
        self.port = port
        self.wire = wire
        self.plans: dict[str, DealPlan] = {}
        self.resign: dict[str, bool] = {}
        self.fast: dict[str, bool] = {}
        self.stream: trio.SocketStream | None = None

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        stream = await trio.open_tcp_stream("127.0.0.1", self.port)
        self.stream = stream
        reader = LineReader(stream, 1 << 22)  # full-form Piquet discards: up to 131 KB a line
        hello = {"type": "hello", "name": self.name, "token": self.token, "protocol": 1, "role": "bot"}
        await stream.send_all(msgspec.json.encode(hello) + b"\n")
        first = await reader.read_line()
        if first is None or json.loads(first).get("type") != "welcome":
            raise RuntimeError(f"the scripted opponent was refused: {first!r}")
        task_status.started()
        while True:
            try:
                line = await reader.read_line()
            except (trio.BrokenResourceError, trio.ClosedResourceError, ProtocolError):
                return
            if line is None:
                return
            msg = json.loads(line)
            if msg.get("type") == "request":
                out = {"type": "action", "id": msg["id"], "action": self.decide(msg)}
                try:
                    await stream.send_all(msgspec.json.encode(out) + b"\n")
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return

    def decide(self, req: dict[str, Any]) -> Any:
        """The opponent's action for ``req`` (a decoded ``request``)."""
        legal = req["legal"]
        state = req["state"]
        decision = req["decision"]
        plan = self.plans.get(req["match_id"]) if state.get("deal") == 1 else None
        met = self.wire.met
        if state.get("deal", 1) > 1 and self.resign.get(req["match_id"]):
            return RESIGN  # not a legal action: the match ends at once (forfeit_illegal)
        if decision == "king":
            return "announce"
        if decision == "play":
            if plan is not None and not state["trick"]:
                for card in plan.leads:
                    if card in legal:
                        return card
            return legal[0]
        if plan is None:
            return {"propose": "play", "respond": "refuse"}.get(decision, legal[0])
        stock = state["stock"]
        if decision == "propose":
            if plan.propose != "adaptive":
                return plan.propose
            first = state["proposals"] == 0
            wanted = {"discard_dealer", "short", "skip"} - met
            return "propose" if first or (wanted and stock > 0) else "play"
        if decision == "respond":
            if plan.respond != "adaptive":
                return plan.respond
            return "accept" if {"discard_elder", "short"} - met else "refuse"
        if decision == "discard":
            me_elder = state["seat"] == state["elder"]
            xmin = 1 if me_elder else 0
            if "short" not in met:
                goal: str | None = "short"
            elif me_elder and "skip" not in met:
                goal = "skip"
            else:
                goal = None
            x = opponent_discard_count(stock, xmin, goal, fast=self.fast.get(req["match_id"], False))
            hand = state["hand"]
            choice = hand[:x]
            return choice if any(sorted(choice) == sorted(opt) for opt in legal) else legal[0]
        return legal[0]

    async def aclose(self) -> None:
        if self.stream is not None:
            with trio.CancelScope(shield=True):
                try:
                    await self.stream.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass
