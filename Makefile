# touchmove: every target does its own set-up on a fresh Debian/Ubuntu machine with python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PORT ?= /dev/ttyACM0

PICO_JS := tests/pico/node_modules/.package-lock.json
LICHESS_JS := tests/livechess/lichess/node_modules/.package-lock.json

.PHONY: pico-deps livechess-deps install broker-deps system-deps test test-quick lint typecheck pytest pytest-main pytest-pico pytest-quick lane-lint lane-typecheck lane-schematics demo broadcast-demo cluster-demo bench bench-broadcast bench-bridge bench-console bench-cluster bench-tables flash mpy hardware-deps hardware-check hardware-draw bench-firmware clean

install: $(STAMP) pico-deps livechess-deps

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || \
	  ( $(SUDO) apt-get update && $(SUDO) apt-get install -y python3-venv && $(PYTHON) -m venv $(VENV) )
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $(STAMP)

# Programs used for real: Mosquitto and nats-server (demos and tests; Debian's packages), Debian's Chromium
# (dashboard tests) and Debian's pgn-extract (reads every round PGN the broadcast tests write). nats-server lives in /usr/sbin, which is not on every user's PATH.
broker-deps:
	@command -v mosquitto >/dev/null 2>&1 || \
	  ( echo "installing mosquitto"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q mosquitto )
	@command -v nats-server >/dev/null 2>&1 || test -x /usr/sbin/nats-server || \
	  ( echo "installing nats-server"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q nats-server )

# The emulated Raspberry Pi Pico of tests/pico: Debian's nodejs and npm, and rp2040js at the version the lock
# file pins (npm ci: exactly the locked tree, nothing resolved anew).
pico-deps: $(PICO_JS)

$(PICO_JS): tests/pico/package.json tests/pico/package-lock.json
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || \
	  ( echo "installing nodejs and npm"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q nodejs npm )
	cd tests/pico && npm ci --no-audit --no-fund --loglevel=error
	@touch $(PICO_JS)

# lichess's DGT client (../shared/clients/lichess-dgt) bundled for headless Chromium in tests/livechess: esbuild and
# chessops at the versions the lock file pins (npm ci).
livechess-deps: $(LICHESS_JS)

$(LICHESS_JS): tests/livechess/lichess/package.json tests/livechess/lichess/package-lock.json
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || \
	  ( echo "installing nodejs and npm"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q nodejs npm )
	cd tests/livechess/lichess && npm ci --no-audit --no-fund --loglevel=error
	@touch $(LICHESS_JS)

system-deps: broker-deps
	@command -v chromium >/dev/null 2>&1 || \
	  ( echo "installing chromium"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium )
	@command -v pgn-extract >/dev/null 2>&1 || test -x /usr/games/pgn-extract || \
	  ( echo "installing pgn-extract"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q pgn-extract )

RUFF := $(BIN)/ruff check host tests bench firmware
SCHEMATICS_CHECK := $(BIN)/python hardware/schematics/check.py

lint: install
	$(RUFF)

typecheck: install
	$(BIN)/mypy
	$(BIN)/mypy --strict bench/figures.py bench/tables.py bench/changelog.py

# The tests run in two lanes at once (issue 40). Most tests wait on wall time (games played in real time through
# pseudo-terminals, brokers and bridges), so the main lane runs them on PYTEST_WORKERS pytest-xdist workers with
# work stealing, more workers than cores. The emulated Pico (tests/pico: node and rp2040js, each emulated board
# busy on a core for minutes) is a lane of its own on PICO_WORKERS workers beside the main lane. Each lane's output
# is printed when it ends (--output-sync); `make pytest` fails if either lane fails. `make test` runs ruff, mypy
# and the schematics' check beside the two lanes, and fails if any of them fails. The lanes' targets install
# nothing themselves (`make pytest` and `make test` have done it).
PYTEST_WORKERS ?= 4
PICO_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS) --dist worksteal

pytest: install system-deps pico-deps livechess-deps
	@$(MAKE) --no-print-directory -k -j2 --output-sync=target pytest-pico pytest-main

pytest-main:
	$(BIN)/pytest -q $(XDIST) --ignore=tests/pico --durations=10

pytest-pico:
	$(BIN)/pytest -q -p no:cacheprovider -n $(PICO_WORKERS) --dist worksteal tests/pico --durations=5

test: install system-deps pico-deps livechess-deps hardware-deps
	@$(MAKE) --no-print-directory -k -j5 --output-sync=target lane-lint lane-typecheck lane-schematics pytest-pico \
	  pytest-main

lane-lint:
	$(RUFF)

lane-typecheck:
	$(BIN)/mypy
	$(BIN)/mypy --strict bench/figures.py bench/tables.py bench/changelog.py

lane-schematics:
	$(SCHEMATICS_CHECK)

# The inner loop: ruff, mypy and the tests without the emulated Pico and without the end-to-end ones (tests/e2e
# and the modules tests/conftest.py marks e2e: games through real processes), at once.
test-quick: install system-deps livechess-deps
	@$(MAKE) --no-print-directory -k -j3 --output-sync=target lane-lint lane-typecheck pytest-quick

pytest-quick:
	$(BIN)/pytest -q $(XDIST) --ignore=tests/pico --ignore=tests/e2e -m "not e2e"

demo: install broker-deps
	$(BIN)/touchmove demo
	@echo "touchmove is installed in $(VENV): run \`. $(VENV)/bin/activate\` to call it (touchmove --help)"

# A simulated 20-board round through a private Mosquitto into the broadcaster; the round PGN is checked.
broadcast-demo: install broker-deps
	$(BIN)/touchmove broadcast-demo --boards 20

# Three halls on a private 3-node NATS cluster; a node is killed mid-round; the round PGN is checked.
cluster-demo: install broker-deps
	$(BIN)/touchmove cluster-demo

bench-cluster: install broker-deps
	$(BIN)/python bench/cluster_latency.py

bench: install
	$(BIN)/python bench/replay_throughput.py

# Every bench writes its figures to bench/figures/<bench>.json; this makes the tables of bench/README.md and the
# README from them (the standard library only: no install). `python bench/tables.py --check` only compares.
bench-tables:
	$(PYTHON) bench/tables.py

bench-broadcast: install broker-deps
	$(BIN)/python bench/broadcast_latency.py

bench-bridge: install broker-deps
	$(BIN)/python bench/bridge_latency.py

# The arbiter's console in Debian's Chromium: 200 boards at 150 moves/s, move -> on screen.
bench-console: install system-deps
	$(BIN)/python bench/dashboard_latency.py --boards 200 --rate 150 --seconds 60

# Firmware for a board: BOARD=pico | pico_w (rp2, Cortex-M0+: armv6m) | esp32s3_devkitc (xtensawin).
# `make mpy` precompiles every module with mpy-cross for the board's architecture; `make flash` installs the
# .mpy files (and main.py) with mpremote, removing old sources first (a .py would shadow its .mpy).
BOARD ?= pico
MARCH := $(if $(filter esp32%,$(BOARD)),xtensawin,armv6m)
MPY_DIR := build/mpy-$(BOARD)

mpy: install
	rm -rf $(MPY_DIR) && mkdir -p $(MPY_DIR)
	cd firmware && for f in $$(find touchmove_fw -name '*.py'); do \
	  mkdir -p ../$(MPY_DIR)/$$(dirname $$f) && \
	  ../$(BIN)/mpy-cross -march=$(MARCH) -o ../$(MPY_DIR)/$${f%.py}.mpy -s $$f $$f || exit 1; done
	cp firmware/main.py $(MPY_DIR)/main.py
	@du -cb $$(find $(MPY_DIR) -name '*.mpy') | tail -1 | awk '{print "$(MPY_DIR): " $$1 " bytes of .mpy ($(MARCH))"}'

flash: mpy
	@test -x $(BIN)/mpremote || $(BIN)/pip install -q mpremote
	-$(BIN)/mpremote connect $(PORT) fs rm -r :touchmove_fw
	$(BIN)/mpremote connect $(PORT) fs cp -r $(MPY_DIR)/touchmove_fw : + fs cp $(MPY_DIR)/main.py : + reset

# Hardware: SKiDL and schemdraw (pyproject test extra) with KiCad 6 symbol and footprint libraries (Debian's
# kicad-symbols, kicad-footprints: the check resolves every footprint a netlist names).
hardware-deps:
	@test -d /usr/share/kicad/symbols || \
	  ( echo "installing kicad-symbols"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q kicad-symbols )
	@test -d /usr/share/kicad/footprints || \
	  ( echo "installing kicad-footprints"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q kicad-footprints )

hardware-check: install hardware-deps
	$(SCHEMATICS_CHECK)

hardware-draw: install hardware-deps
	$(BIN)/python hardware/schematics/check.py --write

bench-firmware: install
	$(BIN)/python bench/firmware_scan.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
