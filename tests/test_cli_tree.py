"""The ``arena`` command tree (arena/cli/): every command, down to each verb, names the function
that runs it, and the commands stand in ``arena --help`` in their modules' ``PLACE`` order."""

from __future__ import annotations

import argparse

from arena.cli import build_parser, command_modules


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


def test_help_order_follows_place() -> None:
    modules = command_modules()
    places = [m.PLACE for m in modules]
    assert places == sorted(places) and len(set(places)) == len(places)  # no two modules share a place
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices)[:3] == ["tournament", "worker", "sprt"] and list(sub.choices)[-1] == "serve"


def test_parsed_arguments_reach_the_runner() -> None:
    args = build_parser().parse_args(["tournament", "--games", "3", "--target", "turn-up"])
    assert args.run.__name__ == "cmd_tournament" and args.games == 3 and args.target == "turn-up"
