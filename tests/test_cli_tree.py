"""The ``arena`` command tree (arena/cli/): every command, down to each verb, names the function
that runs it; the commands stand in ``arena --help`` in the order of the table of commands
(arena/cli/common.py), each added by the module the table names; a command loads only its own
module."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from arena.cli import build_parser, command_modules, command_of
from arena.cli.common import COMMANDS

ROOT = Path(__file__).resolve().parents[1]


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """Every runnable command as (its words, the parser's ``run`` default)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(path, parser.get_default("run"))]
    return [leaf for name, child in subs[0].choices.items() for leaf in leaves(child, (*path, name))]


def test_every_command_has_a_runner() -> None:
    found = leaves(build_parser())
    assert len(found) >= 24  # 9 commands without verbs, the 15 verbs of bots, author, authors and spectators
    missing = [" ".join(words) for words, run in found if not callable(run)]
    assert missing == []


def test_upload_and_remote_run_as_an_author() -> None:
    runs = dict(leaves(build_parser()))
    assert runs[("bots", "upload")].__name__ == runs[("bots", "remote")].__name__ == "cmd_author"
    assert runs[("bots", "list")].__name__ == "cmd_bots"


def subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_help_order_and_lines_follow_the_table() -> None:
    sub = subparsers(build_parser())
    assert list(sub.choices) == list(COMMANDS)  # every command, in the table's order
    assert list(sub.choices)[:3] == ["tournament", "worker", "sprt"] and list(sub.choices)[-1] == "serve"
    helps = {action.dest: action.help for action in sub._choices_actions}
    assert helps == {name: text for name, (_, text) in COMMANDS.items()}
    assert len(command_modules()) == len({module for module, _ in COMMANDS.values()})


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_comes_from_the_module_the_table_names(name: str) -> None:
    parser = build_parser(name)
    sub = subparsers(parser)
    assert list(sub.choices) == list(COMMANDS)  # the others are placeholders, in the same order
    module = COMMANDS[name][0]
    mine = [n for n, (m, _) in COMMANDS.items() if m == module]
    for other, child in sub.choices.items():
        loaded = any(isinstance(a, argparse._SubParsersAction) for a in child._actions) or child.get_default("run")
        assert bool(loaded) == (other in mine), other


def test_the_command_word_is_found_as_argparse_finds_it() -> None:
    assert command_of(["--debug", "bots", "list", "--db", "x.db"]) == "bots"
    assert command_of(["--help"]) is None and command_of([]) is None
    assert command_of(["--", "serve", "--config", "c.toml"]) == "serve"
    assert command_of(["nope"]) == "nope"  # refused by the parse, in one line
    top = build_parser("")
    # the scan is exact only while the top-level options take no value
    assert all(a.nargs == 0 for a in top._actions if a.option_strings)
    assert build_parser(command_of(["--debug", "bots", "list"]) or "").parse_args(
        ["--debug", "bots", "list"]).run.__name__ == "cmd_bots"


LOADED = """
import json, sys
from arena.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("arena", "numpy", "scipy", "starlette", "trio")))))
"""


def modules_after(*argv: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", LOADED, *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_help_loads_no_command_module() -> None:
    loaded = modules_after("--help")
    assert "arena.cli.common" in loaded
    heavy = {m for m in loaded if m.startswith(("arena.cli.", "arena.schedule", "arena.store", "arena.net",
                                                 "numpy", "scipy", "starlette", "trio"))}
    assert heavy == {"arena.cli.common"}


def test_a_command_loads_only_its_own_module() -> None:
    loaded = modules_after("spectators", "--help")
    commands = {m for m in loaded if m.startswith("arena.cli.")} - {"arena.cli.common"}
    assert commands == {"arena.cli.spectators"}
    assert not any(m.startswith(("arena.schedule", "arena.tools", "scipy", "starlette")) for m in loaded)


def test_parsed_arguments_reach_the_runner() -> None:
    args = build_parser().parse_args(["tournament", "--games", "3", "--target", "turn-up"])
    assert args.run.__name__ == "cmd_tournament" and args.games == 3 and args.target == "turn-up"
