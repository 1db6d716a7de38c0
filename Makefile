# The README's two commands: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TESTS  := $(VENV)/.installed-test

.PHONY: all run run-piquet test typecheck lint-imports test-slow bench bench-more bench-scale bench-season study twins lint schema clean

# the C sample bot (libc only): built by `make`, `make run` and `make test`
CC     = gcc
CFLAGS ?= -O2 -std=c11 -Wall -Wextra -Werror
C_BOT  := sample_bots/c_bot

# the Java sample bot (the JDK only), `java -jar bot.jar`: built by `make` and `make test` where javac is
JAVAC    ?= javac
JAVA_BOT := sample_bots/java/bot.jar
HAVE_JDK := $(and $(shell command -v $(JAVAC) 2>/dev/null),$(shell command -v jar 2>/dev/null))

all: $(STAMP) $(C_BOT) $(if $(HAVE_JDK),$(JAVA_BOT))

$(C_BOT): sample_bots/c_bot.c
	$(CC) $(CFLAGS) -o $@ $<

$(JAVA_BOT): sample_bots/java/Bot.java
	rm -rf sample_bots/java/build
	$(JAVAC) --release 11 -Xlint:all -Werror -d sample_bots/java/build $<
	jar --create --file $@ --main-class Bot -C sample_bots/java/build .
	rm -rf sample_bots/java/build

# the benchmark's instant bot (answers legal[0] at once; libc only): built by `make bench`
BENCH_BOT := sample_bots/bench/instant

$(BENCH_BOT): sample_bots/bench/instant.c
	$(CC) $(CFLAGS) -o $@ $<

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e .
	touch $(STAMP)

# the test extras (pytest, hypothesis, playwright, ...) only for the targets that need them
$(TESTS): $(STAMP)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(TESTS)

# Bots run under bubblewrap by default; on a machine without bwrap the demo (our own sample bots)
# runs them unsandboxed, and says so in one line.
TRUST   := $(if $(shell command -v bwrap 2>/dev/null),,--trust-bots)
NOTRUST := @command -v bwrap >/dev/null 2>&1 || echo "note: bwrap (Debian bubblewrap) not found: the sample bots run unsandboxed (--trust-bots); install it to sandbox them"

## make run: the demo round-robin of the five quick sample bots (C included) over real TCP, Elo table at the end
## (the search bot thinks for up to 40% of each decision's time: see docs/contests.md to include it)
run: $(STAMP) $(C_BOT)
	$(NOTRUST)
	$(BIN)/arena tournament $(TRUST) --bots sample_bots/random.toml sample_bots/greedy.toml sample_bots/highcard.toml sample_bots/cautious.toml sample_bots/c_bot.toml --games 200 --seed 2026 --db arena.db

## make run-piquet: the same demo in Piquet
run-piquet: $(STAMP) $(C_BOT)
	$(NOTRUST)
	$(BIN)/arena tournament $(TRUST) --game piquet --bots sample_bots/random.toml sample_bots/greedy.toml sample_bots/highcard.toml sample_bots/cautious.toml sample_bots/c_bot.toml --games 40 --seed 2026 --db arena.db

## make typecheck: mypy, strict on the packages listed in pyproject.toml's [tool.mypy] files (a few seconds)
typecheck: $(TESTS)
	$(BIN)/python -m mypy

## make lint-imports: the layers contract of pyproject.toml's [tool.importlinter] (imports inside functions too)
lint-imports: $(TESTS)
	$(BIN)/lint-imports

## make test: the type check and the layers contract, then the whole test suite in two processes (pytest-xdist: the tests
## share no port, file or database; the Java bot's doctor checks and tournament included where a JDK is)
test: $(TESTS) typecheck lint-imports
	@if command -v $(CC) >/dev/null 2>&1; then $(MAKE) -s $(C_BOT); else echo "note: no $(CC): the C sample bot's tests are skipped"; fi
	@if [ -n "$(HAVE_JDK)" ]; then $(MAKE) -s $(JAVA_BOT); else echo "note: no JDK (javac, jar): the Java sample bot's tests are skipped; install default-jdk-headless"; fi
	$(BIN)/python -m pytest -q -n 2 -m "not slow"

## make test-slow: the load studies (marker `slow`) and every property test at its full example
## count (`make test` runs a fifth of them); CI runs it after `make test`
test-slow: $(TESTS)
	@if command -v $(CC) >/dev/null 2>&1; then $(MAKE) -s $(C_BOT); fi
	$(BIN)/python -m pytest -q -m slow
	ARENA_EXAMPLES=1 $(BIN)/python -m pytest -q -n 2 tests/test_ecarte_properties.py tests/test_piquet_properties.py \
		tests/test_compact_legal.py tests/test_hidden_information.py tests/test_framing.py tests/test_wagers.py

## make bench: issue 24's targets, each figure beside its baseline of the same run, with its verdict (3 to 5
## minutes): the user's path (`arena tournament --workers 0`, sandboxed C bots) vs one match of instant C bots; the
## match core + log vs a raw trio round trip; the driver vs that floor; p99 with 100 matches of bots thinking 20 ms,
## and saturated vs Little's law; --workers 2 vs 1 vs the machine's two-core scaling (Ecarte, Piquet). Exits 1
## naming each missed target. BENCH=--quick: a smoke test; ACPC_DEALER='command': the ACPC dealer's decisions/s too.
## First, the store's hot path: CPU per record_result, queue claim + commit and check_token (arena/tools/bench_store.py)
bench: $(STAMP) $(C_BOT) $(BENCH_BOT)
	$(BIN)/python -m arena.tools.bench_store --results 2000
	$(BIN)/python -m arena.tools.bench_targets $(BENCH)

## make bench-more: the earlier figures (`arena bench`): engine deals/s, referee decisions/s beside a raw ping-pong,
## Piquet's compact form, floods, the instant bots' server figures and the 8-bot workers phase (many minutes)
bench-more: $(STAMP) $(C_BOT) $(BENCH_BOT)
	$(BIN)/arena bench

## make bench-scale: the fair-clock study, 1,000 then 2,000 concurrent matches of instant C bots
## (largest time charged for one decision, timeouts); a few minutes
bench-scale: $(STAMP) $(BENCH_BOT)
	$(BIN)/arena bench --scale

## make bench-season: a season's cost (issue 21): a store seeded with 10,000 bots and 10 million matches next to an
## empty one, each under `arena serve` with 500 remote instant bots, twice (full, empty, empty, full); SQLite (the seed is cached in
## ~/.cache/arena-bench-season), then PostgreSQL (a throwaway cluster, or DB=postgresql://... to use a server).
## Exits 1 naming each missed target; options: python -m arena.tools.bench_season --help (BENCH_SEASON='--seconds 120')
bench-season: $(STAMP) $(BENCH_BOT)
	$(BIN)/python -m arena.tools.bench_season $(if $(DB),--db '$(DB)') $(BENCH_SEASON)

## make study: the seeded simulation studies of the ladder and the SPRT (arena/stats/studies.py)
study: $(STAMP)
	$(BIN)/python -m arena.stats.studies
## make twins: the memorising bot's twin study over 200 duplicate pairs (first- v second-half score,
## sandboxed as two copies, as one process, and with --trust-bots); a few minutes
twins: $(TESTS)
	$(BIN)/python tests/test_twins.py 200

lint: $(TESTS)
	$(BIN)/ruff check arena protocol tests sample_bots

## regenerate docs/protocol.schema.json from the message structs
schema: $(STAMP)
	$(BIN)/python -m protocol.schema > docs/protocol.schema.json

clean:
	rm -rf $(VENV) arena.db arena.db-wal arena.db-shm logs $(C_BOT) $(BENCH_BOT) $(JAVA_BOT) sample_bots/java/build
