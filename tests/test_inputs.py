"""Every malformed input gets its code (docs/protocol.md §2, §11, §13.6; docs/contests.md
"Names and inputs").

* Lines from spectators and bettors (bots: tests/test_hostile.py modes ``deep_json`` and
  ``utf8_unknown``), over real sockets: JSON nested 30,000 deep is ``bad_json`` and invalid UTF-8
  hidden in an ignored field is ``bad_utf8``, never a RecursionError, a disconnect or a silent
  accept; the connection carries on. A hello nested too deep is refused with ``bad_json``.
* Numbers on the command line and in a contest file: out of bounds (negative, zero, 10**25, past
  SQLite's 64-bit integers, not finite) is refused with one line, never a traceback, and nothing
  is written (``arena spectators add --deposit -500`` used to register the spectator and then
  print a traceback; ``10**25`` was accepted).
* Exchange counts are public and go to spectators live (protocol.md §13.4, contests.md §8).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import trio

from arena.match.referee import MatchConfig
from arena.net.server import ArenaServer, ServerConfig
from arena.net.spectate import SpectatorHub
from arena.schedule.formats import Pairing
from arena.schedule.tournament import play_match
from arena.wagers.ledger import MAX_BALANCE, MAX_DEPOSIT, BadAmount, Ledger
from protocol.framing import MAX_DEPTH, ProtocolError, decode_client, decode_server
from tests.conftest import Client, cli_in_process, connect_bot

ROOT = Path(__file__).resolve().parent.parent
DEEP = b'{"type":"subscribe","match_id":"*","x":' + b"[" * 30000 + b"]" * 30000 + b"}"
DEEP_OBJ = b'{"type":"list","x":' + b'{"a":' * 10000 + b"1" + b"}" * 10000 + b"}"
HIDDEN_BYTES = b'{"type":"list","note":"\xff\xfe"}'


def test_every_decoder_gives_a_protocol_code_for_deep_nesting_and_bad_bytes_anywhere():
    for line in (DEEP, DEEP_OBJ, b"[" * 60000, b'{"type":"action","id":1,"action":' + b"[" * 30000):
        for decode in (decode_client, decode_server):
            with pytest.raises(ProtocolError) as err:
                decode(line)
            assert err.value.code == "bad_json", (line[:40], err.value.message)
    for decode, line in ((decode_client, HIDDEN_BYTES),
                         (decode_server, b'{"type":"goodbye","reason":"x","extra":"\xc3\x28"}')):
        with pytest.raises(ProtocolError) as err:
            decode(line)
        assert err.value.code == "bad_utf8"
    nested = b'{"type":"list","x":' + b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"}"
    assert type(decode_client(nested)).__name__ == "ListMatches"  # the documented depth is accepted
    assert type(decode_client('{"type":"list","x":"é ✓"}'.encode())).__name__ == "ListMatches"


async def test_spectators_and_bettors_get_bad_json_and_bad_utf8_and_carry_on(store, nursery):
    hub = SpectatorHub()
    hub.nursery = nursery
    srv = ArenaServer(store, ServerConfig(), hub=hub)
    port = await nursery.start(srv.serve)
    token = store.add_spectator("ann")
    for name, tok in (("fan", ""), ("ann", token)):
        c = await Client.connect(port)
        await c.send({"type": "hello", "name": name, "token": tok, "role": "spectator"})
        assert (await c.recv(10))["type"] == "welcome"
        for line, code in ((DEEP, "bad_json"), (DEEP_OBJ, "bad_json"), (HIDDEN_BYTES, "bad_utf8")):
            await c.send_raw(line + b"\n")
            err = await c.recv(10)
            assert err["type"] == "error" and err["code"] == code and err["fatal"] is False, err
        await c.send({"type": "list"})
        assert (await c.recv(10))["type"] == "matches"  # still connected and served
        await c.send({"type": "bet", "match_id": "t1-m0001", "seat": 0, "cents": 10**30})
        err = await c.recv(10)
        assert err["type"] == "error" and err["code"] in ("betting_disabled", "not_authenticated"), err
        await c.aclose()
    c = await Client.connect(port)  # the first line itself
    await c.send_raw(b'{"type":"hello","name":"x","role":"spectator","z":' + b"[" * 30000 + b"]" * 30000 + b"}\n")
    err = await c.recv(10)
    assert err["type"] == "error" and err["code"] == "bad_json" and err["fatal"] is True, err


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    """``arena ARGV`` in this process (:func:`tests.conftest.cli_in_process`): status, all output."""
    done = cli_in_process(*argv, capsys=capsys)
    return done.returncode, done.stdout + done.stderr


def test_deposits_are_positive_and_capped_through_the_real_cli(tmp_path):
    db = str(tmp_path / "arena.db")
    for deposit in ("-500", str(10**25)):  # more values through main() below (a subprocess costs a second)
        proc = subprocess.run([sys.executable, "-m", "arena.cli", "spectators", "add", "bob", "--deposit", deposit,
                               "--db", db], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        last = proc.stderr.splitlines()[-1]
        assert last.startswith("arena spectators add: error: argument --deposit: the value must be from 1 to"), last
    assert not Path(db).exists()  # refused before anything was opened, let alone registered


def test_deposit_bounds_in_the_ledger():
    ledger = Ledger()
    for bad in (-500, 0, MAX_DEPOSIT + 1, 10**25, 1.5, True):
        with pytest.raises(BadAmount):
            ledger.deposit("ann", bad)
    assert ledger.deposit("ann", MAX_DEPOSIT) == MAX_DEPOSIT
    for _ in range(MAX_BALANCE // MAX_DEPOSIT - 1):
        ledger.deposit("ann", MAX_DEPOSIT)
    with pytest.raises(BadAmount):
        ledger.deposit("ann", 1)
    assert ledger.balance("ann") == MAX_BALANCE and ledger.total_deposited == MAX_BALANCE


BAD_OPTIONS = [
    ["spectators", "add", "bob", "--deposit", "-500"],
    ["spectators", "add", "bob", "--deposit", str(10**25)],
    ["spectators", "add", "bob", "--deposit", "0"],
    ["spectators", "add", "bob", "--deposit", str(MAX_DEPOSIT + 1)],
    ["tournament", "--bots", "a.toml", "--games", "-1"],
    ["tournament", "--bots", "a.toml", "--seed", str(10**23)],
    ["tournament", "--bots", "a.toml", "--seed", "-1"],
    ["tournament", "--bots", "a.toml", "--concurrency", "0"],
    ["tournament", "--bots", "a.toml", "--move-ms", "-5"],
    ["tournament", "--bots", "a.toml", "--move-ms", str(10**23)],
    ["tournament", "--bots", "a.toml", "--bank-ms", "-1"],
    ["tournament", "--bots", "a.toml", "--grace-ms", "-100"],
    ["tournament", "--bots", "a.toml", "--max-strikes", "-1"],
    ["tournament", "--bots", "a.toml", "--max-illegal", "-1"],
    ["tournament", "--resume", str(10**23)],
    ["sprt", "--bot", "a.toml", "--vs", "b.toml", "--max-pairs", "0"],
    ["sprt", "--bot", "a.toml", "--vs", "b.toml", "--seed", str(2**64)],
    ["sprt", "--bot", "a.toml", "--vs", "b.toml", "--elo1", "inf"],
    ["sprt", "--bot", "a.toml", "--vs", "b.toml", "--elo1", "nan"],
    ["sprt", "--bot", "a.toml", "--vs", "b.toml", "--elo1", "1e308"],
    ["sprt", "--bot", "a.toml", "--vs", "b.toml", "--alpha", "nan"],
    ["watch", "--port", "99999"],
    ["watch", "--port", "-1"],
    ["doctor", "a.toml", "--move-ms", "-1"],
    ["bench", "--deals", "-1"],
]


@pytest.mark.parametrize("argv", BAD_OPTIONS, ids=lambda a: " ".join(a[:1] + a[-2:]))
def test_out_of_bounds_numbers_on_the_command_line_get_one_line(argv, tmp_path, capsys):
    db = ["--db", str(tmp_path / "arena.db")] if argv[0] in ("spectators", "tournament", "sprt") else []
    status, out = run_cli(argv + db, capsys)
    assert status == 2, out
    assert "Traceback" not in out
    last = out.strip().splitlines()[-1]
    assert f"error: argument {argv[-2]}:" in last and "must be" in last, last
    assert not (tmp_path / "arena.db").exists() or argv[0] != "spectators"


BAD_KEYS = [
    ("seed = 100000000000000000000", "seed must be from 0"),
    ("max_matches = -3", "max_matches must be from 0"),
    ("http_port = 70000", "http_port must be from 0 to 65,535"),
    ("betting_s = -1.0", "betting_s must be a number of seconds"),
    ("betting_s = nan", "betting_s must be a number of seconds"),
    ("reveal_delay_s = inf", "reveal_delay_s must be a number of seconds"),
    ("max_strikes = -1", "max_strikes must be from 0"),
    ("[time]\nmove_ms = 0", "[time] move_ms must be from 1"),
    ("[time]\nbank_ms = -1", "[time] bank_ms must be from 0"),
    ("[server]\nport = -1", "[server] port must be from 0"),
    ("[server]\nmax_line = 0", "[server] max_line must be from 1"),
    ("[limits]\ncpu_s = 0", "[limits] cpu_s must be from 1"),
]


@pytest.mark.parametrize("text,message", BAD_KEYS, ids=[k for k, _ in BAD_KEYS])
def test_out_of_bounds_numbers_in_a_contest_file_get_one_line(text, message, tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(text + "\n")
    status, out = run_cli(["serve", "--config", str(cfg)], capsys)
    assert status == 2 and "Traceback" not in out, out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"arena: error: {cfg}: {message}"), lines


async def test_exchange_counts_reach_spectators_live_and_their_cards_only_with_the_reveal(store, nursery):
    """protocol.md §13.4 and contests.md §8 (one statement): the number of cards each player
    exchanged is public at the table, so it goes out live as the opponent's copy of the
    ``exchange`` (``discarded``/``drawn`` null) before the deal ends; the cards come with the
    reveal."""
    hub = SpectatorHub()
    hub.nursery = nursery
    srv = ArenaServer(store, ServerConfig(), hub=hub)
    await nursery.start(srv.serve)
    fan = await Client.connect(srv.port)
    await fan.send({"type": "hello", "name": "fan", "role": "spectator"})
    assert (await fan.recv())["type"] == "welcome"
    await fan.send({"type": "subscribe", "match_id": "*"})
    a, b = await connect_bot(srv, "alice"), await connect_bot(srv, "bob")
    tid = store.create_tournament("ecarte", "test", 1, MatchConfig(), ["alice", "bob"], [])
    row = store.add_match(tid, "ecarte", Pairing(index=0, bot0="alice", bot1="bob", seed=5))
    async with trio.open_nursery() as n:
        n.start_soon(a.play, lambda r: "propose" if "propose" in r["legal"] else "accept"
                     if "accept" in r["legal"] else r["legal"][0])
        n.start_soon(b.play, lambda r: "accept" if "accept" in r["legal"] else r["legal"][0])
        await play_match(store, srv, row, MatchConfig(), Path(store.path).parent / "logs", hub=hub)
    feed = []
    while not feed or feed[-1]["type"] != "watch_end":
        feed.append(await fan.recv(10))
    live = [m for m in feed if m["type"] == "spectate"]
    first_end = next(i for i, m in enumerate(live) if m["event"]["kind"] == "deal_end")
    exchanges = [m["event"] for m in live[:first_end] if m["event"]["kind"] == "exchange"]
    assert exchanges, "no exchange was announced live"
    assert all(e["discarded"] is None and e["drawn"] is None for e in exchanges), exchanges
    assert any(e["count"] >= 1 for e in exchanges), exchanges
    reveal = next(m for m in feed if m["type"] == "reveal" and m["deal"] == 1)
    owned = [e for e in reveal["events"] if e["kind"] == "exchange" and e["discarded"] is not None]
    assert [e["count"] for e in owned] == [e["count"] for e in exchanges]


def chained(bodies: list[bytes]) -> bytes:
    """A file with a valid hash chain (the chain is no signature: anyone can make one)."""
    import hashlib

    from arena.match.log import GENESIS

    prev, out = GENESIS, []
    for body in bodies:
        prev = hashlib.sha256(prev.encode() + body).hexdigest()
        out.append(body[:-1] + b',"hash":"' + prev.encode() + b'"}')
    return b"\n".join(out) + b"\n"


HEADER = b'{"type":"match","game":"ecarte","seed":1,"config":{}}'
HOSTILE_LOGS = {
    "deep": [b'{"type":"match","x":' + b"[" * 30000 + b"]" * 30000 + b"}"],
    "seed": [b'{"type":"match","game":"ecarte","seed":{"a":1},"config":{}}', b'{"type":"result"}'],
    "config": [b'{"type":"match","game":"ecarte","seed":1,"config":{"rules":7}}'],
    "event": [HEADER, b'{"type":"event","event":{"kind":"x"}}'],
    "game": [b'{"type":"match","game":["ecarte"],"seed":1,"config":{}}'],
    "action": [HEADER, b'{"type":"action","seat":[1],"decision":{},"action":{}}'],
}


@pytest.mark.parametrize("kind", list(HOSTILE_LOGS))
def test_arena_replay_of_a_hostile_chained_file_is_one_line_not_a_traceback(kind, tmp_path, capsys):
    path = tmp_path / f"{kind}.jsonl"
    path.write_bytes(chained(HOSTILE_LOGS[kind]))
    status, out = run_cli(["replay", str(path)], capsys)
    lines = out.strip().splitlines()
    assert status == 1 and len(lines) == 1 and lines[0].startswith("not verified: "), out


HOSTILE_TOML = {
    "deep": b'name = "x"\ncommand = ' + b"[" * 5000 + b"]" * 5000 + b"\n",
    "bad_utf8": b'name = "\xff"\ncommand = ["a"]\n',
    "not_toml": b"name = = \n",
}


@pytest.mark.parametrize("kind", list(HOSTILE_TOML))
def test_hostile_manifests_and_contest_files_get_one_line(kind, tmp_path, capsys):
    path = tmp_path / f"{kind}.toml"
    path.write_bytes(HOSTILE_TOML[kind])
    for argv in (["bots", "submit", str(path), "--db", str(tmp_path / "a.db")], ["serve", "--config", str(path)],
                 ["tournament", "--bots", str(path), str(path), "--db", str(tmp_path / "a.db")]):
        status, out = run_cli(argv, capsys)
        lines = out.strip().splitlines()
        assert status == 2 and len(lines) == 1 and lines[0].startswith(f"arena: error: {path}: "), (argv, out)
