"""The fair clock under load: N concurrent matches of instant C bots, every decision's charge.

``python -m arena.tools.fairness N SECONDS [--admit]`` starts a server (in-memory store), launches
``2 N`` copies of ``sample_bots/c_bot`` (``make`` builds it; it answers at once), plays matches
pair by pair for ``SECONDS`` seconds (``--admit``: each start through
:func:`arena.schedule.admission.admit`) and prints decisions/s, the server's CPU per decision and
the time charged to the bots (p50, p99, max, in ms) with the number of timeouts. An instant bot
should be charged about nothing at any load (docs/protocol.md §10.4, "What is charged"): the
figure to watch is the max. Not part of ``make test``: it measures the machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import time
from pathlib import Path

import trio

from arena.match import core
from arena.match.core import MatchConfig
from arena.match.runner import MatchRunner, MatchSpec
from arena.net.server import ArenaServer, ServerConfig
from arena.schedule.admission import admit
from arena.store.sqlite import SCRYPT, Store

C_BOT = Path(__file__).resolve().parents[2] / "sample_bots" / "c_bot"


async def study(n: int, seconds: float, use_admission: bool, bot: Path = C_BOT) -> str:
    """Run the study; return its one-line report."""
    charged: list[float] = []
    answer = core.MatchCore.answer

    def recording(self: core.MatchCore, seat: int, rid: int, action: object, t_ns: int) -> core.Output:
        out = answer(self, seat, rid, action, t_ns)
        if out.elapsed_ns is not None:
            charged.append(out.elapsed_ns / 1e6)  # ms
        return out

    core.MatchCore.answer = recording  # type: ignore[method-assign]
    SCRYPT["n"] = 2**10  # tokens are not what this measures
    store = Store(":memory:")
    names = [f"b{i}" for i in range(2 * n)]
    tokens = [store.add_bot(name) for name in names]
    server = ArenaServer(store, ServerConfig(port=0, max_connections=8192, max_conns_per_addr=8192,
                                             auth_concurrency=4, auth_addr_burst=10**6, auth_global_burst=10**6,
                                             auth_name_burst=10**6))
    ends = {"matches": 0, "timeouts": 0, "other": 0}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve)
            for name, token in zip(names, tokens, strict=True):
                env = {**os.environ, "ARENA_PORT": str(port), "ARENA_NAME": name, "ARENA_TOKEN": token}
                procs.append(subprocess.Popen([str(bot)], env=env, stderr=subprocess.DEVNULL))
            for name in names:
                if await server.wait_for(name, 60) is None:
                    raise RuntimeError(f"{name} did not connect")
            t_end = trio.current_time() + seconds
            cpu0 = time.process_time()

            async def pair(i: int) -> None:
                k = 0
                while trio.current_time() < t_end:
                    if use_admission:
                        await admit()
                    a, b = server.bots[names[2 * i]], server.bots[names[2 * i + 1]]
                    r = await MatchRunner(MatchSpec(f"m{i}-{k}", 1000 * i + k, MatchConfig(), (a.name, b.name)),
                                          (a, b)).run()
                    k += 1
                    ends["matches"] += 1
                    key = "timeouts" if r.reason == "forfeit_timeout" else ("other" if r.reason != "target" else "")
                    if key:
                        ends[key] += 1

            async with trio.open_nursery() as pairs:
                for i in range(n):
                    pairs.start_soon(pair, i)
            cpu = time.process_time() - cpu0
            for conn in list(server.bots.values()):
                await conn.aclose("study over")
            nursery.cancel_scope.cancel()
    finally:
        core.MatchCore.answer = answer  # type: ignore[method-assign]
        for p in procs:
            p.kill()
            p.wait()
        store.close()
    charged.sort()
    if not charged:
        return f"N={n}: no decision made"

    def q(p: float) -> float:
        return charged[min(len(charged) - 1, int(p * len(charged)))]

    return (f"N={n} admission={use_admission}: {len(charged)} decisions in {seconds:g} s "
            f"({len(charged) / seconds:.0f}/s), server CPU {1e6 * cpu / len(charged):.0f} us/decision; "
            f"charged ms p50 {q(0.5):.2f} p99 {q(0.99):.2f} max {charged[-1]:.2f}; {ends}")


def main() -> None:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="concurrent matches")
    parser.add_argument("seconds", type=float, help="how long to play")
    parser.add_argument("--admit", action="store_true", help="start each match through admission control")
    args = parser.parse_args()
    print(trio.run(study, args.n, args.seconds, args.admit))


if __name__ == "__main__":
    main()
