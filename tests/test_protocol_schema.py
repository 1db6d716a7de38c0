"""The protocol's documentation cannot drift from the code.

* ``docs/protocol.schema.json`` is exactly what ``python -m protocol.schema`` prints;
* every struct tag of both message unions (and of the game events) is in the schema;
* every JSON example in ``docs/protocol.md`` decodes into a message (or event, or state view)
  struct and uses no field the struct lacks;
* every error code the server can send is in the doc's error table, and nothing else is;
* every match-end reason, event kind and decision kind is documented;
* the annotated transcript in the doc is what ``tools/transcript.py`` captures from a real run.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any, get_args

import msgspec
import pytest

from protocol.messages import ClientMessage, GameEvent, GameView, Request, ServerMessage
from protocol.schema import schema_text

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"
SCHEMA_FILE = ROOT / "docs" / "protocol.schema.json"
ERROR_SOURCES = [
    "protocol/framing.py",
    "arena/seat.py",
    "arena/server.py",
    "arena/referee.py",
    "arena/games/base.py",
]
REASON_SOURCES = ["arena/seat.py", "arena/referee.py", "arena/tournament.py"]

ERROR_CODE_PATTERNS = [
    re.compile(r'ProtocolError\(\s*"([a-z_]+)"'),
    re.compile(r'send_error\(\s*"([a-z_]+)"'),
    re.compile(r'_refuse\(\s*stream\s*,\s*"([a-z_]+)"'),
    re.compile(r'^\s*code\s*(?::[^=\n]*)?=\s*"([a-z_]+)"', re.M),  # class attribute
    re.compile(r'_fault\(\s*"([a-z_]+)"'),
    re.compile(r'SeatFault\(\s*"[a-z_]+"\s*,\s*"([a-z_]+)"'),  # second argument: the code
]
JSON_FENCE = re.compile(r"^```json[^\n]*\n(.*?)^```", re.M | re.S)
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
        for key, item in value.items():
            if key == config.tag_field:
                continue
            if key not in obj.__struct_fields__:
                out.append(f"{path}{key}")
            else:
                out += unknown_fields(item, getattr(obj, key), f"{path}{key}.")
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


def test_every_error_code_is_in_the_doc_table_and_only_those():
    documented = set(TABLE_CODE.findall(section(doc_text(), "Error codes")))
    used = codes_in_code()
    assert not used - documented, f"error codes missing from docs/protocol.md's table: {sorted(used - documented)}"
    assert not documented - used, f"docs/protocol.md documents unused error codes: {sorted(documented - used)}"


def test_every_match_end_reason_is_documented():
    reasons: set[str] = set()
    for rel in REASON_SOURCES:
        source = (ROOT / rel).read_text(encoding="utf-8")
        reasons.update(re.findall(r'"(forfeit_[a-z_]+)"', source))
        reasons.update(re.findall(r'(?<![\w.])reason\s*=\s*"([a-z_]+)"', source))
    assert {"target", "forfeit_timeout", "forfeit_illegal"} <= reasons
    documented = set(TABLE_CODE.findall(section(doc_text(), "Match end")))
    assert not reasons - documented, f"match_end reasons missing from docs/protocol.md: {sorted(reasons - documented)}"


def test_every_event_kind_and_decision_is_documented():
    events = set(TABLE_CODE.findall(section(doc_text(), "Game events")))
    assert set(tags(GameEvent)) <= events, sorted(set(tags(GameEvent)) - events)
    field = next(f for f in msgspec.inspect.type_info(Request).fields if f.name == "decision")
    decisions = set(field.type.values)
    documented = set(TABLE_CODE.findall(section(doc_text(), "Decisions")))
    assert decisions and decisions <= documented, sorted(decisions - documented)


# --------------------------------------------------------------------------- the transcript


def load_transcript_tool() -> Any:
    spec = importlib.util.spec_from_file_location("transcript_tool", ROOT / "tools" / "transcript.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("transcript_tool", module)
    spec.loader.exec_module(module)
    return module


def doc_transcript(text: str) -> tuple[int, int, list[str], list[str]]:
    """(seed, seat, lines before the gap, lines after it) of the doc's annotated transcript."""
    begin = re.search(r"<!-- transcript: seed=(\d+) seat=(\d) .*?-->", text)
    assert begin, "docs/protocol.md has no '<!-- transcript: seed=N seat=S ... -->' marker"
    end = text.index("<!-- transcript: end -->", begin.end())
    body = text[begin.end() : end]
    head, _, tail = body.partition("<!-- transcript: gap -->")

    def lines(part: str) -> list[str]:
        return [ln for block in JSON_FENCE.findall(part) for ln in block.splitlines() if ln.strip()]

    return int(begin.group(1)), int(begin.group(2)), lines(head), lines(tail)


async def test_the_annotated_transcript_is_a_real_capture():
    seed, seat, head, tail = doc_transcript(doc_text())
    tool = load_transcript_tool()
    captured = [line[3:] for line in (await tool.capture(seed))[seat]]
    hint = f"regenerate with `python tools/transcript.py --seed {seed} --seat {seat} --all` and re-annotate"
    assert head and captured[: len(head)] == head, f"the transcript in docs/protocol.md is stale: {hint}"
    assert not tail or captured[-len(tail) :] == tail, f"the transcript's ending is stale: {hint}"
    first_deal_end = next(i for i, ln in enumerate(captured) if '"kind":"deal_end"' in ln)
    assert len(head) > first_deal_end, "the transcript must run at least to the end of the first deal"
