# Airlock's two set-up commands are `make run` and `make test`; the rest serve them.
SHELL := /bin/bash
CARGO ?= cargo
LISTEN ?= 127.0.0.1:8080
DATA_DIR ?= ./airlock-data

.PHONY: run test lint bench doctor chromium pyclient conformance

# The official MCP Python SDK, an independent client the tests drive Airlock with.
MCP_PY_VERSION := 2.3.0

## Build and start the gateway on $(LISTEN) with state under $(DATA_DIR).
run: chromium
	$(CARGO) run --locked -p airlock -- serve --listen $(LISTEN) --data-dir $(DATA_DIR)

## Every test, against a real headless Chromium; then prove no browser was left running.
test: chromium pyclient
	./conformance/run
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		$(CARGO) nextest run --workspace --locked; \
	else \
		$(CARGO) test --workspace --locked; \
	fi
	@leaked=$$(pgrep -f '[u]ser-data-dir=.*airlock-chromium-' || true); \
	if [ -n "$$leaked" ]; then echo "leaked Chromium processes after the tests: $$leaked"; exit 1; fi

## A virtualenv with the official MCP Python SDK (independent client for the tests).
pyclient: .venv/.mcp-$(MCP_PY_VERSION)

.venv/.mcp-$(MCP_PY_VERSION):
	@command -v python3 >/dev/null 2>&1 || { echo "the MCP client tests need python3: run 'sudo apt-get install python3 python3-venv'"; exit 1; }
	python3 -m venv .venv
	.venv/bin/pip install -q --disable-pip-version-check "mcp==$(MCP_PY_VERSION)"
	@touch $@

## The official MCP conformance suite against a real `airlock serve` (also part of `test`).
conformance:
	./conformance/run

## Formatting and clippy, as CI runs them.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

doctor: chromium
	$(CARGO) run --locked -q -p airlock -- doctor

## Debian's Chromium (never a downloaded one). As root, install it; otherwise say what to install.
chromium:
	@have() { command -v "$$1" >/dev/null 2>&1; }; \
	if [ -n "$${AIRLOCK_CHROME:-}" ]; then exit 0; fi; \
	if have chromium-headless-shell && (have chromium || have chromium-browser || have google-chrome); then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && have apt-get; then \
		echo "installing Debian's chromium and chromium-headless-shell"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-headless-shell >/dev/null; \
	elif have chromium || have chromium-browser || have google-chrome; then \
		exit 0; \
	else \
		echo "Airlock needs Chromium: run 'sudo apt-get install chromium chromium-headless-shell' (or set AIRLOCK_CHROME)"; exit 1; \
	fi

## Timings of the browser core (release build; medians of 7 runs). Issue 6 extends this
## into the side-by-side comparison with Playwright MCP.
bench: chromium
	$(CARGO) run --locked --release -p airlock-browser --example measure
