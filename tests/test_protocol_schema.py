"""The protocol's documentation cannot drift from the code.

* ``docs/protocol.schema.json`` is exactly what ``python -m protocol.schema`` prints;
* every struct tag of both message unions (and of the game events) is in the schema;
* every JSON example in ``docs/protocol.md`` decodes into a message (or event, or state view)
  struct and uses no field the struct lacks;
* every error code the server can send is in the doc's error table, and nothing else is;
* every match-end reason (the games' own included), event kind and decision kind is documented;
* every field of every state view, and every rule option, has a row in the doc's tables;
* the annotated transcripts in the doc (one Écarté, one Piquet) are what ``tools/transcript.py``
  captures from a real run.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest

from arena.games import GAMES
from protocol.messages import ClientMessage, GameEvent, GameView, Request, Rules, ServerMessage
from protocol.schema import schema_text
from tests.conftest import wall_clock_limit

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"
SCHEMA_FILE = ROOT / "docs" / "protocol.schema.json"
ERROR_SOURCES = [
    "protocol/framing.py",
    "arena/match/seat.py",
    "arena/match/core.py",  # the fault policy and the connection's protocol state
    "arena/net/server.py",
    "arena/match/referee.py",
    "arena/games/base.py",
    "arena/schedule/tournament.py",  # a chouette bid that is not in legal
    "arena/net/spectate.py",
    "arena/schedule/contest.py",
    "arena/wagers/ledger.py",  # WagerError subclasses: their code goes into a bettor's error
]
REASON_SOURCES = ["arena/match/core.py", "arena/match/seat.py", "arena/match/referee.py",
                  "arena/schedule/tournament.py", "arena/schedule/contest.py"]

ERROR_CODE_PATTERNS = [
    re.compile(r'ProtocolError\(\s*"([a-z_]+)"'),
    re.compile(r'send_error\(\s*"([a-z_]+)"'),
    re.compile(r'_refuse\(\s*stream\s*,\s*"([a-z_]+)"'),
    re.compile(r'^\s*code\s*(?::[^=\n]*)?=\s*"([a-z_]+)"', re.M),  # class attribute
    re.compile(r'_fault\(\s*"([a-z_]+)"'),
    re.compile(r'"forfeit_[a-z_]+"\s*,\s*"(?!forfeit_)([a-z_]+)"'),  # a forfeit (reason, code, ...): the code
    re.compile(r'Error\(\s*code\s*=\s*"([a-z_]+)"'),  # an Error message built directly
]
JSON_FENCE = re.compile(r"^```json[^\n]*\n(.*?)^```", re.M | re.S)
JSON_FENCE_INFO = re.compile(r"^```json([^\n]*)\n(.*?)^```", re.M | re.S)
TABLE_CODE = re.compile(r"^\|\s*`([a-z_]+)`\s*\|", re.M)

REGENERATE = "docs/protocol.schema.json is out of date: run `make schema` and commit the result"


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def tags(union: Any) -> dict[str, type]:
    """``tag -> struct`` for every struct of a tagged union."""
    return {t.__struct_config__.tag: t for t in get_args(union)}


# --------------------------------------------------------------------------- the schema file


def test_schema_file_matches_the_structs():
    assert SCHEMA_FILE.exists(), REGENERATE
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), REGENERATE


def test_schema_text_is_deterministic_json_with_a_title():
    text = schema_text()
    assert text == schema_text()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    doc = json.loads(text)
    assert doc["title"] and doc["description"]
    assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("union_name, union", [("ClientMessage", ClientMessage), ("ServerMessage", ServerMessage)])
def test_every_message_tag_is_in_the_schema(union_name, union):
    defs = json.loads(schema_text())["$defs"]
    mapping = defs[union_name]["discriminator"]["mapping"]
    assert defs[union_name]["discriminator"]["propertyName"] == "type"
    for tag, struct in tags(union).items():
        assert tag in mapping, f"{union_name}: tag {tag!r} missing from the schema"
        assert mapping[tag] == f"#/$defs/{struct.__name__}"
        assert defs[struct.__name__]["properties"]["type"]["enum"] == [tag]


def test_every_game_event_kind_is_in_the_schema():
    defs = json.loads(schema_text())["$defs"]
    event = defs["EventMsg"]["properties"]["event"]
    assert event["discriminator"]["propertyName"] == "kind"
    for tag, struct in tags(GameEvent).items():
        assert event["discriminator"]["mapping"].get(tag) == f"#/$defs/{struct.__name__}", tag
        assert defs[struct.__name__]["properties"]["kind"]["enum"] == [tag]


# --------------------------------------------------------------------------- examples in the doc


def json_examples(text: str) -> list[Any]:
    """Every JSON value in the doc's ```json blocks: a block is one value, or one per line."""
    values = []
    for block in JSON_FENCE.findall(text):
        try:
            values.append(json.loads(block))
            continue
        except ValueError:
            pass
        for n, line in enumerate(block.splitlines(), 1):
            if line.strip():
                try:
                    values.append(json.loads(line))
                except ValueError as exc:
                    pytest.fail(f"docs/protocol.md: line {n} of a json block is not JSON ({exc}):\n{line}")
    return values


def unknown_fields(value: Any, obj: Any, path: str = "") -> list[str]:
    """Keys of the JSON ``value`` that the decoded struct ``obj`` has no field for."""
    out = []
    if isinstance(obj, msgspec.Struct) and isinstance(value, dict):
        config = obj.__struct_config__
        names = dict(zip(obj.__struct_encode_fields__, obj.__struct_fields__, strict=True))  # "from" -> from_
        for key, item in value.items():
            if key == config.tag_field:
                continue
            if key not in names:
                out.append(f"{path}{key}")
            else:
                out += unknown_fields(item, getattr(obj, names[key]), f"{path}{key}.")
    elif isinstance(obj, list) and isinstance(value, list):
        for i, (item, sub) in enumerate(zip(value, obj, strict=False)):
            out += unknown_fields(item, sub, f"{path}{i}.")
    return out


def decode_example(value: dict[str, Any]) -> Any:
    raw = json.dumps(value).encode()
    if "type" in value:
        union: Any = ClientMessage if value["type"] in tags(ClientMessage) else ServerMessage
    elif "kind" in value:
        union = GameEvent
    else:
        union = GameView
    return msgspec.json.decode(raw, type=union)


def test_the_doc_has_examples_of_every_message_and_event():
    examples = [v for v in json_examples(doc_text()) if isinstance(v, dict)]
    types = {v.get("type") for v in examples}
    kinds = {v.get("kind") for v in examples} | {
        v["event"].get("kind") for v in examples if isinstance(v.get("event"), dict)
    }
    assert set(tags(ClientMessage)) | set(tags(ServerMessage)) <= types
    assert set(tags(GameEvent)) <= kinds


def test_every_json_example_in_the_doc_decodes():
    examples = [v for v in json_examples(doc_text()) if isinstance(v, dict) and v.keys() & {"type", "kind", "game"}]
    assert len(examples) > 20
    for value in examples:
        try:
            msg = decode_example(value)
        except msgspec.ValidationError as exc:
            pytest.fail(f"docs/protocol.md example does not decode: {exc}\n{json.dumps(value)}")
        extra = unknown_fields(value, msg)
        assert not extra, f"docs/protocol.md example has fields the struct lacks: {extra}\n{json.dumps(value)}"


def test_the_compact_examples_follow_the_rules():
    """§8.13's requests describe exactly what the rules allow for the state they carry
    (piquet.md §P4.1-§P4.2), and the answers that follow them are in the description."""
    examples = [v for v in json_examples(doc_text()) if isinstance(v, dict)]
    compact = [(i, v) for i, v in enumerate(examples) if v.get("type") == "request" and isinstance(v["legal"], dict)]
    assert len(compact) >= 2
    assert any(v.get("type") == "hello" and v.get("legal") == "compact" for v in examples)
    for i, req in compact:
        msg = decode_example(req)
        choose, state = msg.legal.choose, msg.state
        assert msg.decision == "discard" and choose.from_ == state.hand
        if state.seat == state.elder:
            assert (choose.min, choose.max) == (1, min(5, state.talon))
        else:
            assert (choose.min, choose.max) == (0, state.talon)
        answer = examples[i + 1]
        assert answer["type"] == "action" and answer["id"] == req["id"]
        cards = answer["action"]
        assert len(set(cards)) == len(cards) and set(cards) <= set(choose.from_)
        assert choose.min <= len(cards) <= choose.max


# --------------------------------------------------------------------------- codes and names


def section(text: str, title_word: str) -> str:
    """The body of the ``## ...`` section whose title contains ``title_word``."""
    match = re.search(rf"^## [^\n]*{title_word}[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"docs/protocol.md has no '## ... {title_word}' section"
    return match.group(1)


def codes_in_code() -> set[str]:
    found: set[str] = set()
    for rel in ERROR_SOURCES:
        source = (ROOT / rel).read_text(encoding="utf-8")
        for pattern in ERROR_CODE_PATTERNS:
            found.update(pattern.findall(source))
    return found


def test_error_codes_are_collected():
    codes = codes_in_code()
    # a sample from each source file, so that a broken pattern cannot pass silently
    assert {"bad_json", "line_too_long", "late_answer", "auth_failed", "timeout", "illegal_action"} <= codes
    assert {"wrong_role", "unknown_match", "too_slow", "not_authenticated", "betting_closed", "unknown_book"} <= codes


def test_every_error_code_is_in_the_doc_table_and_only_those():
    documented = set(TABLE_CODE.findall(section(doc_text(), "Error codes")))
    used = codes_in_code()
    assert not used - documented, f"error codes missing from docs/protocol.md's table: {sorted(used - documented)}"
    assert not documented - used, f"docs/protocol.md documents unused error codes: {sorted(documented - used)}"


def game_end_reasons() -> set[str]:
    """The ``end_reason`` of every game engine: a class attribute (Écarté's ``target``), or a
    property whose string literals are reasons, and which may name the ``scoring`` option
    (Piquet: ``draw``, or the scoring in force, ``rubicon`` or ``cent``)."""
    reasons: set[str] = set()
    for engine in GAMES.values():
        attr = inspect.getattr_static(engine, "end_reason")
        if isinstance(attr, str):
            reasons.add(attr)
            continue
        source = inspect.getsource(attr.fget)
        reasons.update(re.findall(r'"([a-z_]+)"', source))
        if "rules.scoring" in source:
            scoring = next(f for f in msgspec.inspect.type_info(Rules).fields if f.name == "scoring")
            reasons.update(scoring.type.values)
    return reasons


def test_every_match_end_reason_is_documented():
    reasons: set[str] = game_end_reasons()
    assert {"target", "rubicon", "cent", "draw"} <= reasons
    for rel in REASON_SOURCES:
        source = (ROOT / rel).read_text(encoding="utf-8")
        reasons.update(re.findall(r'"(forfeit_[a-z_]+)"', source))
        reasons.update(re.findall(r'(?<![\w.])reason\s*=\s*"([a-z_]+)"', source))
    assert {"target", "forfeit_timeout", "forfeit_illegal", "aborted"} <= reasons
    documented = set(TABLE_CODE.findall(section(doc_text(), "Match end")))
    assert not reasons - documented, f"match_end reasons missing from docs/protocol.md: {sorted(reasons - documented)}"


def test_every_event_kind_and_decision_is_documented():
    events = set(TABLE_CODE.findall(section(doc_text(), "Game events")))
    assert set(tags(GameEvent)) <= events, sorted(set(tags(GameEvent)) - events)
    field = next(f for f in msgspec.inspect.type_info(Request).fields if f.name == "decision")
    decisions = set(field.type.values)
    documented = set(TABLE_CODE.findall(section(doc_text(), "Decisions")))
    assert decisions and decisions <= documented, sorted(decisions - documented)


def test_every_state_view_field_and_rule_option_is_documented():
    views = section(doc_text(), "The state view")
    documented = set(TABLE_CODE.findall(views))
    for view in get_args(GameView):
        missing = set(view.__struct_fields__) - documented
        assert not missing, f"{view.__name__} fields missing from docs/protocol.md §9: {sorted(missing)}"
    rules = set(re.findall(r"^\|\s*`rules\.([a-z_]+)`\s*\|", section(doc_text(), "Messages"), re.M))
    assert set(Rules.__struct_fields__) <= rules, sorted(set(Rules.__struct_fields__) - rules)


# --------------------------------------------------------------------------- the transcript


def load_transcript_tool() -> Any:
    spec = importlib.util.spec_from_file_location("transcript_tool", ROOT / "tools" / "transcript.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("transcript_tool", module)
    spec.loader.exec_module(module)
    return module


TRANSCRIPT_BEGIN = re.compile(
    r"<!-- transcript: seed=(?P<seed>\d+) seat=(?P<seat>\d)"
    r"(?: game=(?P<game>[a-z]+))?(?: abridge=(?P<abridge>\d+))? .*?-->"
)


class Transcript(msgspec.Struct):
    """One annotated transcript of the doc: how to capture it again, and its lines before and
    after the ``gap`` marker, each as ``(line, abridged)`` (``abridged``: shown in a
    ```` ```json abridged ```` block, i.e. cut by ``tools/transcript.py``'s ``abridge``)."""

    seed: int
    seat: int
    game: str
    abridge: int
    head: list[tuple[str, bool]]
    tail: list[tuple[str, bool]]


def doc_transcripts(text: str) -> list[Transcript]:
    """Every ``<!-- transcript: seed=N seat=S [game=G] [abridge=K] ... -->`` ... ``<!-- transcript:
    end -->`` section of the doc."""
    out = []
    for begin in TRANSCRIPT_BEGIN.finditer(text):
        end = text.index("<!-- transcript: end -->", begin.end())
        body = text[begin.end() : end]
        head, _, tail = body.partition("<!-- transcript: gap -->")

        def lines(part: str) -> list[tuple[str, bool]]:
            return [
                (ln, "abridged" in info.split())
                for info, block in JSON_FENCE_INFO.findall(part)
                for ln in block.splitlines()
                if ln.strip()
            ]

        out.append(
            Transcript(
                seed=int(begin["seed"]),
                seat=int(begin["seat"]),
                game=begin["game"] or "ecarte",
                abridge=int(begin["abridge"] or 0),
                head=lines(head),
                tail=lines(tail),
            )
        )
    return out


def test_the_doc_has_a_transcript_of_each_game():
    transcripts = doc_transcripts(doc_text())
    assert sorted(t.game for t in transcripts) == sorted(GAMES), "one annotated transcript per game"


def test_abridging_only_cuts_legal_lists():
    tool = load_transcript_tool()
    legal = [[c] for c in ("7c", "8c", "9c", "Tc", "Jc")]
    line = json.dumps({"type": "request", "id": 1, "legal": legal, "state": {}}, separators=(",", ":"))
    cut = json.loads(tool.abridge(line, 2))
    assert cut["legal"] == legal[:2] + legal[-1:] and cut["state"] == {} and cut["id"] == 1
    assert tool.abridge(line, 4) == line == tool.abridge(line, 0)
    event = '{"type":"event","match_id":"t1-m0001","seq":1,"event":{"kind":"hand","seat":0,"cards":["7c"]}}'
    assert tool.abridge(event, 1) == event


@pytest.mark.parametrize("index", range(len(doc_transcripts(doc_text()))))
async def test_the_annotated_transcript_is_a_real_capture(index, mock_clock):
    """Over real TCP, but on trio's frozen mock clock: the scripted bots are charged no time, so
    the transcript (its ``bank_ms``, who times out) is the same on a loaded machine."""
    t = doc_transcripts(doc_text())[index]
    tool = load_transcript_tool()
    with wall_clock_limit(120):
        captured = [line[3:] for line in (await tool.capture(t.seed, tool.config_for(t.game)))[t.seat]]
    hint = (
        f"regenerate with `python tools/transcript.py --game {t.game} --seed {t.seed} --seat {t.seat} --all"
        + (f" --abridge {t.abridge}`" if t.abridge else "`")
        + " and re-annotate"
    )

    def same(doc_lines: list[tuple[str, bool]], real: list[str]) -> bool:
        if len(doc_lines) != len(real):
            return False
        for (shown, abridged), line in zip(doc_lines, real, strict=True):
            expected = tool.abridge(line, t.abridge) if abridged else line
            if shown != expected or (abridged and expected == line):  # "abridged" must cut something
                return False
        return True

    stale = f"the {t.game} transcript in docs/protocol.md is stale: {hint}"
    assert t.head and same(t.head, captured[: len(t.head)]), stale
    assert not t.tail or same(t.tail, captured[-len(t.tail) :]), f"the {t.game} transcript's ending is stale: {hint}"
    first_deal_end = next(i for i, ln in enumerate(captured) if '"kind":"deal_end"' in ln)
    assert len(t.head) > first_deal_end, "a transcript must run at least to the end of the first deal"


def test_the_error_code_literal_is_the_doc_table():
    """protocol.messages.ErrorCode (hence the schema's enum) lists exactly the documented codes."""
    from protocol.messages import ErrorCode

    documented = set(re.findall(r"^\|\s*`([a-z0-9_]+)`\s*\|", section(doc_text(), "Error codes"), re.M))
    assert set(get_args(ErrorCode)) == documented
    assert {"rate_limited", "server_full", "idle_timeout"} <= documented
