"""The doctor's report: one row per check, and how it is printed."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table
from rich.text import Text

from arena.tools.doctor.wire import WireLine

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"


@dataclass
class Check:
    """One row of the report."""

    key: str
    title: str
    status: str
    details: str


@dataclass
class Report:
    """The outcome of a doctor run: the checks in order, the bot's output tail, the wire."""

    bot: str
    manifest: str
    checks: list[Check]
    log_tail: str = ""
    log_dir: str = ""
    seconds: float = 0.0
    transcript: list[WireLine] = field(default_factory=list)
    secret: str = ""  # the bot's token, masked when the transcript is printed
    limits: str = ""
    """How the bot's memory and processes were limited (a cgroup or rlimits), and its peak use."""
    limits_brief: str = ""
    """The same without the host's paths nor why there is no cgroup (for an author's report)."""

    @property
    def ok(self) -> bool:
        """True when no check failed (a skipped check is not a failure)."""
        return all(c.status != FAIL for c in self.checks)

    def check(self, key: str) -> Check:
        """The check named ``key`` (raises ``KeyError``)."""
        for c in self.checks:
            if c.key == key:
                return c
        raise KeyError(key)

    def summary(self) -> str:
        """``N checks, M passed`` (and the failed and skipped counts when there are any)."""
        n = len(self.checks)
        passed = sum(c.status == PASS for c in self.checks)
        failed = sum(c.status == FAIL for c in self.checks)
        skipped = sum(c.status == SKIP for c in self.checks)
        text = f"{n} checks, {passed} passed"
        if failed:
            text += f", {failed} failed"
        if skipped:
            text += f", {skipped} not exercised"
        return text


STYLE = {PASS: "bold green", FAIL: "bold red", SKIP: "yellow"}


def print_report(console: Console, report: Report, verbose: bool = False) -> None:
    """Print the table (check, result, details), the bot's output tail when something failed
    (or with ``verbose``), the transcript with ``verbose``, and the summary line."""
    if verbose:
        console.rule("wire transcript (← to the bot, → from the bot)")
        t0 = report.transcript[0].t if report.transcript else 0.0
        for wl in report.transcript:
            arrow = "→" if wl.src == "bot" else ("⇠" if wl.src == "doctor" else "←")
            text = wl.raw.decode("utf-8", errors="replace")
            if report.secret:
                text = text.replace(report.secret, "<ARENA_TOKEN>")
            if len(text) > 200:
                text = text[:199] + "…"
            console.print(Text(f"{(wl.t - t0) * 1000:9.1f} ms {arrow} {text}"), soft_wrap=True)
    table = Table(title=Text(f"arena doctor: {report.bot} ({report.manifest})"), show_lines=True)  # not markup
    table.add_column("check", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("details", overflow="fold")
    for c in report.checks:
        table.add_row(Text(c.title), Text(c.status, style=STYLE[c.status]), Text(c.details))
    console.print(table)
    if report.log_tail and (verbose or not report.ok):
        console.rule("last lines of the bot's output")
        console.print(Text(report.log_tail))
    if report.limits:
        console.print(Text(f"limits: {report.limits}"))
    if report.log_dir:
        console.print(Text(f"bot output and match logs kept in {report.log_dir}"))
    console.print(Text(f"{report.summary()} ({report.seconds:.1f} s)", style="bold green" if report.ok else "bold red"))
