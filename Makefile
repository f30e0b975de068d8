# touchmove: every target does its own set-up on a fresh Debian/Ubuntu machine with python3.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PORT ?= /dev/ttyACM0

.PHONY: install broker-deps system-deps test lint typecheck pytest demo broadcast-demo cluster-demo bench bench-broadcast bench-bridge bench-cluster flash clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || \
	  ( $(SUDO) apt-get update && $(SUDO) apt-get install -y python3-venv && $(PYTHON) -m venv $(VENV) )
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $(STAMP)

# Programs used for real: Mosquitto and nats-server (demos and tests; Debian's packages) and Debian's Chromium
# (dashboard tests). nats-server lives in /usr/sbin, which is not on every user's PATH.
broker-deps:
	@command -v mosquitto >/dev/null 2>&1 || \
	  ( echo "installing mosquitto"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q mosquitto )
	@command -v nats-server >/dev/null 2>&1 || test -x /usr/sbin/nats-server || \
	  ( echo "installing nats-server"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q nats-server )

system-deps: broker-deps
	@command -v chromium >/dev/null 2>&1 || \
	  ( echo "installing chromium"; $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium )

lint: install
	$(BIN)/ruff check host tests bench

typecheck: install
	$(BIN)/mypy

pytest: install system-deps
	$(BIN)/pytest -q

test: lint typecheck pytest

demo: install broker-deps
	$(BIN)/touchmove demo

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

bench-broadcast: install broker-deps
	$(BIN)/python bench/broadcast_latency.py

bench-bridge: install broker-deps
	$(BIN)/python bench/bridge_latency.py

flash: install
	@test -x $(BIN)/mpremote || $(BIN)/pip install -q mpremote
	find firmware -name __pycache__ -prune -exec rm -rf {} +
	$(BIN)/mpremote connect $(PORT) fs cp -r firmware/touchmove_fw : + fs cp firmware/main.py : + reset

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
