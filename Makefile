# Airlock's two set-up commands are `make run` and `make test`; the rest serve them.
SHELL := /bin/bash
CARGO ?= cargo
LISTEN ?= 127.0.0.1:8080
DATA_DIR ?= ./airlock-data

.PHONY: run test lint bench bench-smoke bench-core bench-peers doctor chromium postgres seccomp pyclient conformance console-deps deploy-check

# The official MCP Python SDK, an independent client the tests drive Airlock with.
MCP_PY_VERSION := 2.3.0
# A real third-party web application the tests drive Airlock through (its admin).
DJANGO_VERSION := 5.2.19
# MiniWoB++'s web tasks (its HTML pages only: installed without the Python
# environment around them), widgets of every kind the tests act on.
MINIWOB_VERSION := 1.1.0
# AgentDojo's prompt-injection tasks, which the data-flow replay renders into pages
# (its model SDKs come with it, so it lives in a venv of its own).
AGENTDOJO_VERSION := 0.1.35
# Property-based testing of /api/v1 against its OpenAPI document.
SCHEMATHESIS_VERSION := 4.32.5
# The model SDKs agent developers put Airlock's tools into: the OpenAI Agents SDK
# (its strict-mode conversion) and google-genai (its MCP adapter for Gemini).
OPENAI_AGENTS_VERSION := 0.24.0
GOOGLE_GENAI_VERSION := 3.6.1
# FastMCP's client, a framework agent developers build on (its recipe runs in `test`).
FASTMCP_VERSION := 4.2.3
# LangChain's MCP adapters need the 1.x MCP SDK, so they live in a venv of their own.
LANGCHAIN_MCP_VERSION := 0.3.2
LANGCHAIN_CORE_VERSION := 1.8.3
LANGCHAIN_MCP_SDK_VERSION := 1.30.0
# The Kubernetes schemas (1.30 to 1.37) deploy/check.py validates the manifests against.
KUBERNETES_VALIDATE_VERSION := 1.37.0

## Build and start the gateway on $(LISTEN) with state under $(DATA_DIR).
run: chromium
	$(CARGO) run --locked -p airlock -- serve --listen $(LISTEN) --data-dir $(DATA_DIR)

## Every test, against a real headless Chromium; then prove no browser was left running.
## Every test's temporary files (Chromium profiles among them) go under TEST_TMP, so
## the leak check looks only at what the tests started, never at another Airlock
## running on the machine.
TEST_TMP := $(CURDIR)/target/test-tmp
test: chromium postgres seccomp pyclient console-deps deploy-check
	./conformance/run
	@rm -rf $(TEST_TMP) && mkdir -p $(TEST_TMP)
	@# The suite's sessions run behind a worker's channel (the default); the
	@# gateway's suite runs once more with them in process ([browser] worker =
	@# "embedded"), which is still a mode users run.
	@if $(CARGO) nextest --version >/dev/null 2>&1; then \
		TMPDIR=$(TEST_TMP) $(CARGO) nextest run --workspace --locked && \
		AIRLOCK_TEST_HOST=embedded TMPDIR=$(TEST_TMP) $(CARGO) nextest run --workspace --locked -E 'package(airlock-gateway)'; \
	else \
		TMPDIR=$(TEST_TMP) $(CARGO) test --workspace --locked && \
		AIRLOCK_TEST_HOST=embedded TMPDIR=$(TEST_TMP) $(CARGO) test -p airlock-gateway --locked; \
	fi
	@# A browser worker started as root may keep its profiles under /tmp (the
	@# test's own temp dir being closed to its user): those count too.
	@leaked=$$(pgrep -f '[u]ser-data-dir=($(TEST_TMP)/|/tmp/airlock-worker-)' || true); \
	leaked="$$leaked$$(pgrep -f ' worker [-]-socket ' || true)"; \
	if [ -n "$$leaked" ]; then echo "leaked Chromium or worker processes after the tests: $$leaked"; exit 1; fi

## A virtualenv with the official MCP Python SDK (independent client for the tests),
## schemathesis (the /api/v1 fuzz run), Django (a real admin app the tests drive) and
## MiniWoB++'s task pages (widgets the tests act on).
pyclient: .venv/.mcp-$(MCP_PY_VERSION) .venv/.schemathesis-$(SCHEMATHESIS_VERSION) .venv/.django-$(DJANGO_VERSION) .venv/.miniwob-$(MINIWOB_VERSION) .venv/.model-sdks-$(OPENAI_AGENTS_VERSION)-$(GOOGLE_GENAI_VERSION) .venv/.fastmcp-$(FASTMCP_VERSION) .venv-langchain/.langchain-$(LANGCHAIN_MCP_VERSION) .venv-agentdojo/.agentdojo-$(AGENTDOJO_VERSION)

.venv-agentdojo/.agentdojo-$(AGENTDOJO_VERSION):
	python3 -m venv .venv-agentdojo
	.venv-agentdojo/bin/pip install -q --disable-pip-version-check "agentdojo==$(AGENTDOJO_VERSION)"
	@touch $@

.venv-langchain/.langchain-$(LANGCHAIN_MCP_VERSION): .venv/.mcp-$(MCP_PY_VERSION)
	python3 -m venv .venv-langchain
	.venv-langchain/bin/pip install -q --disable-pip-version-check "langchain-mcp-adapters==$(LANGCHAIN_MCP_VERSION)" "langchain-core==$(LANGCHAIN_CORE_VERSION)" "mcp==$(LANGCHAIN_MCP_SDK_VERSION)"
	@touch $@

.venv/.mcp-$(MCP_PY_VERSION):
	@command -v python3 >/dev/null 2>&1 || { echo "the MCP client tests need python3: run 'sudo apt-get install python3 python3-venv'"; exit 1; }
	python3 -m venv .venv
	.venv/bin/pip install -q --disable-pip-version-check "mcp==$(MCP_PY_VERSION)"
	@touch $@

.venv/.schemathesis-$(SCHEMATHESIS_VERSION): .venv/.mcp-$(MCP_PY_VERSION)
	.venv/bin/pip install -q --disable-pip-version-check "schemathesis==$(SCHEMATHESIS_VERSION)"
	@touch $@

.venv/.django-$(DJANGO_VERSION): .venv/.mcp-$(MCP_PY_VERSION)
	.venv/bin/pip install -q --disable-pip-version-check "django==$(DJANGO_VERSION)"
	@touch $@

.venv/.model-sdks-$(OPENAI_AGENTS_VERSION)-$(GOOGLE_GENAI_VERSION): .venv/.mcp-$(MCP_PY_VERSION)
	.venv/bin/pip install -q --disable-pip-version-check "openai-agents==$(OPENAI_AGENTS_VERSION)" "google-genai==$(GOOGLE_GENAI_VERSION)"
	@touch $@

.venv/.fastmcp-$(FASTMCP_VERSION): .venv/.mcp-$(MCP_PY_VERSION)
	.venv/bin/pip install -q --disable-pip-version-check "fastmcp==$(FASTMCP_VERSION)"
	@touch $@

.venv/.miniwob-$(MINIWOB_VERSION): .venv/.mcp-$(MCP_PY_VERSION)
	.venv/bin/pip install -q --disable-pip-version-check --no-deps "miniwob==$(MINIWOB_VERSION)"
	@touch $@

## The Kubernetes manifests in deploy/, validated offline against the schemas, and
## their security settings checked (also part of `test`).
deploy-check: .venv/.kubernetes-validate-$(KUBERNETES_VALIDATE_VERSION)
	.venv/bin/python deploy/check.py

.venv/.kubernetes-validate-$(KUBERNETES_VALIDATE_VERSION): .venv/.mcp-$(MCP_PY_VERSION)
	.venv/bin/pip install -q --disable-pip-version-check "kubernetes-validate==$(KUBERNETES_VALIDATE_VERSION)"
	@touch $@

## The official MCP conformance suite against a real `airlock serve` (also part of `test`).
conformance:
	./conformance/run

## Formatting and clippy, as CI runs them.
lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) clippy -p airlock --features conformance-fixtures --bins --locked -- -D warnings

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

## Debian's PostgreSQL, for the store's Postgres tests (they start their own server in a
## temporary directory; the package's own cluster is not used). As root, install it.
postgres:
	@if [ -n "$${AIRLOCK_PG_BIN:-}" ] || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's postgresql"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	else \
		echo "the tests need PostgreSQL: run 'sudo apt-get install postgresql' (or set AIRLOCK_PG_BIN)"; exit 1; \
	fi

## libseccomp's Python bindings (Debian's python3-seccomp): one test runs Airlock under a
## filter that refuses user namespaces, as container runtimes' default profiles do.
seccomp:
	@if /usr/bin/python3 -c 'import seccomp' >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian's python3-seccomp"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-seccomp >/dev/null; \
	else \
		echo "the tests need libseccomp's Python bindings: run 'sudo apt-get install python3-seccomp'"; exit 1; \
	fi

## Airlock side by side with Playwright MCP and agent-browser through one MCP client
## (bench/run.py): a Markdown table on stdout and bench/results/latest.json.
BENCH_RUNS ?= 5
BENCH_EPISODES ?= 10
bench: chromium pyclient bench-peers .venv/.bpe-openai
	$(CARGO) build --locked --release -p airlock
	.venv/bin/python bench/run.py --runs $(BENCH_RUNS)
	.venv/bin/python bench/widgets.py --episodes $(BENCH_EPISODES)
	$(CARGO) run --locked --release -q -p airlock-gateway --example gate_cost | tee bench/results/gate-cost.txt
	$(CARGO) run --locked --release -q -p airlock-task --example task_cost | tee bench/results/task-cost.txt
	$(CARGO) run --locked --release -q -p airlock-flow --example flow_cost | tee bench/results/flow-cost.txt

## One repetition, Airlock only, on the debug build `make test` made: keeps the harness honest in CI.
bench-smoke: chromium pyclient .venv/.bpe-openai
	$(CARGO) build --locked -p airlock
	.venv/bin/python bench/run.py --runs 1 --systems airlock --airlock target/debug/airlock --out target/bench-smoke.json
	.venv/bin/python bench/widgets.py --episodes 1 --systems airlock --airlock target/debug/airlock --out target/bench-smoke-widgets.json

## Timings of the browser core alone, without MCP (release build; medians of 7 runs).
bench-core: chromium
	$(CARGO) run --locked --release -p airlock-browser --example measure

## The console test's playwright-core and axe-core, pinned; never a browser download.
console-deps: crates/airlock/tests/console/node_modules/.installed crates/airlock/tests/clients/vercel/node_modules/.installed crates/airlock/tests/clients/webbotauth/node_modules/.installed

# Cloudflare's Web Bot Auth packages, pinned in their package-lock.json (a site's
# verifier in crates/airlock/tests/it/identity.rs).
crates/airlock/tests/clients/webbotauth/node_modules/.installed: crates/airlock/tests/clients/webbotauth/package.json crates/airlock/tests/clients/webbotauth/package-lock.json
	cd crates/airlock/tests/clients/webbotauth && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

# Vercel's AI SDK MCP client, pinned in its package-lock.json (a recipe's test).
crates/airlock/tests/clients/vercel/node_modules/.installed: crates/airlock/tests/clients/vercel/package.json crates/airlock/tests/clients/vercel/package-lock.json
	cd crates/airlock/tests/clients/vercel && npm ci --no-audit --no-fund --ignore-scripts
	touch $@

crates/airlock/tests/console/node_modules/.installed: crates/airlock/tests/console/package.json crates/airlock/tests/console/package-lock.json
	cd crates/airlock/tests/console && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --ignore-scripts
	touch $@

## The peers, pinned in bench/package-lock.json; never a browser download.
bench-peers: bench/node_modules/.installed

bench/node_modules/.installed: bench/package.json bench/package-lock.json
	cd bench && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --ignore-scripts
	chmod +x bench/node_modules/agent-browser/bin/agent-browser-linux-*
	@touch $@

## Exact o200k_base token counts from a tokenizer that ships its vocabulary.
.venv/.bpe-openai: .venv/.mcp-$(MCP_PY_VERSION)
	.venv/bin/pip install -q --disable-pip-version-check "bpe-openai==0.1.4"
	@touch $@
