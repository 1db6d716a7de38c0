"""The scripted Piquet matches (``arena doctor --game piquet``)."""

from __future__ import annotations

from dataclasses import dataclass

from protocol.messages import Rules


@dataclass(frozen=True)
class PiquetPlan:
    """A scripted Piquet match: the rules, dealt from the engine's seeded shuffle (any deal
    meets the forced Piquet situations); the opponent takes one card as elder and none as
    younger, so the talon keeps cards for the bot's ``look`` and ``expose``."""

    name: str
    rules: Rules
    goals: tuple[str, ...]
    bot_role: str = "any"


PQ_32 = PiquetPlan("piquet-32", Rules(), goals=(
    "pq_discard_elder", "pq_discard_younger", "pq_look", "pq_expose", "pq_lead", "pq_follow", "pq_void"))
PQ_36 = PiquetPlan("piquet-36", Rules(pack=36, packets=3, scoring="cent"), goals=(
    "pq_36", "pq_discard_elder", "pq_discard_younger", "pq_look", "pq_expose"))
