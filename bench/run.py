"""Airlock side by side with Playwright MCP and agent-browser, through one client.

Every system is driven by the same code: the official MCP Python SDK over stdio,
against the same fixture pages served on loopback by this script. Per metric: median,
min and max over the measured runs (after one warm-up), and Airlock / peer ratios.
Writes a Markdown table to stdout and bench/results/latest.json.

  python bench/run.py [--runs 5] [--systems airlock,airlock-embedded,playwright-mcp,agent-browser]
"""

import argparse
import asyncio
import atexit
import datetime
import http.server
import json
import os
import pathlib
import re
import statistics
import sys
import tempfile
import threading
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import fleet  # noqa: E402 - bench/fleet.py, found through the line above
import floors  # noqa: E402 - likewise
import load  # noqa: E402 - bench/load.py, likewise
SITE = ROOT / "crates/airlock-test-support/fixtures/site"
BENCH = ROOT / "bench"
CHROMIUM = os.environ.get("AIRLOCK_CHROME", "/usr/bin/chromium")
# What Chromium needs on this machine (closed network, root).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def tokenizer():
    """Exact o200k_base counts from a package that ships its vocabulary."""
    try:
        import bpe_openai
        enc = bpe_openai.get_encoding("o200k_base")
        return lambda text: len(enc.encode(text))
    except Exception as e:  # noqa: BLE001 - a missing tokenizer must not hide the rest
        print(f"note: no o200k_base tokenizer ({e}); token counts are omitted", file=sys.stderr)
        return lambda text: None


COUNT = tokenizer()


# ---- fixture site ------------------------------------------------------------------

def admin_table(rows):
    """The 2,000-row admin page, the same markup as the Rust fixture server's."""
    out = ["<!doctype html><html><head><title>Admin</title></head><body><h1>Users</h1><table>"
           "<caption>Accounts</caption><thead><tr><th>Name</th><th>Email</th><th>Role</th>"
           "<th>Actions</th></tr></thead><tbody>"]
    for i in range(rows):
        role = "admin" if i % 7 == 0 else "member"
        out.append(f"<tr><td>user{i}</td><td>user{i}@example.com</td><td>{role}</td><td>"
                   "<button onclick=\"this.textContent='Editing'\">Edit</button> "
                   "<button onclick=\"this.closest('tr').remove()\">Delete</button></td></tr>")
    out.append("</tbody></table></body></html>")
    return "".join(out).encode()


def serve_site():
    """Two servers on 127.0.0.1:0 (the second is the redirect's other origin)."""
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(SITE), **k)

        def log_message(self, *a):
            pass

        def do_GET(self):
            path, _, query = self.path.partition("?")
            params = dict(kv.split("=", 1) for kv in query.split("&") if "=" in kv)
            if path == "/admin":
                body = admin_table(min(int(params.get("rows", "2000")), 20000))
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif path == "/redirect":
                from urllib.parse import unquote
                self.send_response(302)
                self.send_header("Location", unquote(params.get("to", "/")))
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                super().do_GET()

    servers = []
    for _ in range(2):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    return [s.server_address[1] for s in servers], servers


# ---- systems -----------------------------------------------------------------------

class System:
    """How to start one MCP server and speak its tool dialect."""

    name = ""

    def __init__(self, ports, tmp):
        self.ports, self.tmp = ports, tmp

    def params(self):
        raise NotImplementedError

    def log_path(self):
        """Where the server's stderr goes (Airlock's holds the stages of each call)."""
        return pathlib.Path(self.tmp) / "server.log"

    def navigate(self, url):
        raise NotImplementedError

    def snapshot(self):
        raise NotImplementedError

    def interactive_snapshot(self):
        """Only what can be acted on (None: the system has no such view)."""
        return None

    def click(self, ref, desc):
        raise NotImplementedError

    def type(self, ref, desc, text):
        raise NotImplementedError

    def screenshot(self):
        raise NotImplementedError

    def page_text(self):
        raise NotImplementedError

    @staticmethod
    def ref_of(snapshot, needle):
        for line in snapshot.splitlines():
            if needle in line:
                # Airlock leads the line with the ref; the others put it in brackets.
                m = re.match(r"\s*- ((?:t\d+)?(?:f\d+)?e\d+) ", line) or re.search(r"\[(?:[^\]]*?, )?ref=(\w+)\]", line)
                if m:
                    return m.group(1)
        raise RuntimeError(f"no ref on a line with {needle!r}")


class Airlock(System):
    name = "airlock"

    def params(self):
        a, b = self.ports
        config = pathlib.Path(self.tmp) / "airlock.toml"
        config.write_text(f'[policy]\nallow_private = ["127.0.0.1:{a}", "127.0.0.1:{b}"]\n')
        if AIRLOCK_WARM[0] is not None:
            config.write_text(config.read_text() + f"[sessions]\nwarm = {AIRLOCK_WARM[0]}\n")

        # The one `tool call` line of each call, as JSON: the stages of an action.
        env = dict(os.environ, AIRLOCK_CONFIG=str(config), AIRLOCK_DATA_DIR=str(pathlib.Path(self.tmp) / "data"),
                   AIRLOCK_CHROME=CHROMIUM,
                   RUST_LOG=os.environ.get("RUST_LOG", "warn,airlock_gateway::session::call=info"))
        binary = AIRLOCK_BINARY[0]
        return StdioServerParameters(command=str(binary), args=["--log-format", "json", "mcp"], env=env)

    def navigate(self, url):
        return "browser_navigate", {"url": url}

    def interactive_snapshot(self):
        return "browser_snapshot", {"interactive_only": True}

    def snapshot(self, offset=0):
        return "browser_snapshot", ({"offset": offset} if offset else {})

    def click(self, ref, desc):
        return "browser_click", {"ref": ref}

    def type(self, ref, desc, text):
        return "browser_type", {"ref": ref, "text": text}

    def screenshot(self):
        return "browser_screenshot", {}

    def page_text(self):
        return "browser_read", {"format": "text"}


class AirlockEmbedded(Airlock):
    """Airlock with its sessions in its own process ([browser] worker = "embedded"),
    beside the default: a worker process of its own. The pair shows what the
    boundary costs per call and in memory."""

    name = "airlock-embedded"

    def params(self):
        params = super().params()
        config = pathlib.Path(self.tmp) / "airlock.toml"
        config.write_text(config.read_text() + '[browser]\nworker = "embedded"\n')
        return params


class AirlockNoEffects(Airlock):
    """Airlock with the built-in effect rules switched off (the call rules stay): no
    request is paused for an effect rule. Beside `airlock` it shows what the default
    effect rules cost a navigation and a click."""

    name = "airlock-no-effects"

    def params(self):
        params = super().params()
        config = pathlib.Path(self.tmp) / "airlock.toml"
        off = ", ".join(f'"{n}"' for n in ("delete-request", "delete-path", "delete-field",
                                             "password-path", "payment-path", "payment-field"))
        config.write_text(config.read_text() + f"[approvals]\ndefaults_off = [{off}]\n")
        return params


class AirlockSigned(Airlock):
    """Airlock with Web Bot Auth on (`[identity] sign = true`): every request of the
    page is paused and signed by the control plane (the worker asks over its
    channel). Beside `airlock` it shows what signing costs a navigation and a click."""

    name = "airlock-signed"

    def params(self):
        params = super().params()
        config = pathlib.Path(self.tmp) / "airlock.toml"
        # stdio serves no directory: the URL sites would fetch it from is named.
        config.write_text(config.read_text() + '[identity]\nsign = true\nagent_url = "http://127.0.0.1:9"\n')
        return params


class AirlockRemote(Airlock):
    """Airlock with its sessions on a worker on "another machine": `airlock worker
    --listen` over TLS on loopback, one `[[workers]]` entry. Beside `airlock` (the
    local worker, a unix socket) it shows what TCP and TLS cost per call."""

    name = "airlock-remote"

    def __init__(self, ports, tmp):
        super().__init__(ports, tmp)
        # Started before any run, so a run's clean-up (which stops what the run
        # started) leaves the worker up: a worker on another machine outlives its
        # clients. Its Chromium is the run's, and goes with it.
        self.workers = fleet.Workers(AIRLOCK_BINARY[0], self.tmp, 1, CHROMIUM)
        atexit.register(self.workers.stop)

    def params(self):
        params = super().params()
        config = pathlib.Path(self.tmp) / "airlock.toml"
        config.write_text(config.read_text() + self.workers.toml())
        fleet.Workers.env(params.env)
        return params


class AirlockPostgres(Airlock):
    """Airlock with its store on PostgreSQL (the shared store of a fleet) instead of
    SQLite: the audit log, the sessions' rows and their running state (the action
    budget counted over every replica, the data-flow reads appended and caught up on)
    go there. Beside `airlock` it shows what a fleet's store costs per call; its
    `*_stage_shared_ms` is the running state's part alone."""

    name = "airlock-postgres"

    def __init__(self, ports, tmp):
        super().__init__(ports, tmp)
        # One server for every run, up before the first: a fleet's store outlives its
        # replicas.
        self.postgres = fleet.Postgres()
        atexit.register(self.postgres.stop)

    def params(self):
        params = super().params()
        params.env["AIRLOCK_DATABASE_URL"] = self.postgres.url
        return params


class AirlockBefore(Airlock):
    """Airlock as an earlier build (`--airlock-before PATH`), run the same way in
    the same run: beside `airlock` it shows what a change costs (e.g. the session
    plan, built from the tenant's policy at each open and read by every stage)."""

    name = "airlock-before"

    def params(self):
        params = super().params()
        if AIRLOCK_BEFORE[0] is None:
            raise SystemExit("airlock-before needs --airlock-before PATH (an earlier build)")
        params.command = str(AIRLOCK_BEFORE[0])
        return params


class PlaywrightMcp(System):
    name = "playwright-mcp"

    def params(self):
        config = pathlib.Path(self.tmp) / "playwright-mcp.json"
        config.write_text(json.dumps({"browser": {"browserName": "chromium", "launchOptions": {
            "executablePath": CHROMIUM, "headless": True, "args": FLAGS}}}))
        env = dict(os.environ, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD="1")
        # Its output dir defaults to the working directory: keep it in the temp dir.
        return StdioServerParameters(
            command=str(BENCH / "node_modules/.bin/playwright-mcp"),
            args=["--config", str(config), "--browser", "chromium", "--executable-path", CHROMIUM,
                  "--headless", "--isolated", "--output-dir", str(self.tmp)], env=env, cwd=str(self.tmp))

    def navigate(self, url):
        return "browser_navigate", {"url": url}

    def snapshot(self, offset=0):
        return "browser_snapshot", {}

    def click(self, ref, desc):
        return "browser_click", {"element": desc, "target": ref}

    def type(self, ref, desc, text):
        return "browser_type", {"element": desc, "target": ref, "text": text}

    def screenshot(self):
        return "browser_take_screenshot", {}

    def page_text(self):
        return "browser_snapshot", {}


class AgentBrowser(System):
    name = "agent-browser"

    def params(self):
        env = dict(os.environ, AGENT_BROWSER_EXECUTABLE_PATH=CHROMIUM, AGENT_BROWSER_ARGS=",".join(FLAGS),
                   AGENT_BROWSER_NO_VERSION_CHECK="1", HOME=str(self.tmp))
        return StdioServerParameters(command=str(BENCH / "node_modules/.bin/agent-browser"), args=["mcp"], env=env)

    def navigate(self, url):
        return "agent_browser_open", {"url": url}

    def interactive_snapshot(self):
        return "agent_browser_snapshot", {"interactive": True}

    def snapshot(self, offset=0):
        return "agent_browser_snapshot", {}

    def click(self, ref, desc):
        return "agent_browser_click", {"selector": "@" + ref}

    def type(self, ref, desc, text):
        return "agent_browser_fill", {"selector": "@" + ref, "text": text}

    def screenshot(self):
        return "agent_browser_screenshot", {}

    def page_text(self):
        return "agent_browser_get_text", {"selector": "body"}


SYSTEMS = {s.name: s for s in (Airlock, AirlockEmbedded, AirlockNoEffects, AirlockSigned, AirlockRemote, AirlockPostgres,
                                AirlockBefore, PlaywrightMcp, AgentBrowser)}
# Systems with a Streamable HTTP server (agent-browser's MCP server is stdio only).
HTTP_SYSTEMS = ("airlock", "playwright-mcp")
# The Airlock binary under test (release for `make bench`, debug for the CI smoke run).
AIRLOCK_BINARY = [ROOT / "target/release/airlock"]
# An earlier build to compare with (the `airlock-before` system), if given.
AIRLOCK_BEFORE = [None]
# `[sessions] warm` for Airlock (None: its default).
AIRLOCK_WARM = [None]


# ---- measuring ---------------------------------------------------------------------

def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def image_bytes(result):
    import base64
    return sum(len(base64.b64decode(c.data)) for c in result.content if getattr(c, "type", "") == "image")


def descendants(pid):
    """`pid` and every process under it."""
    children = {}
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def pss_mib(pids):
    """Proportional set size of a process tree (smaps_rollup), in MiB."""
    total = 0
    for pid in pids:
        try:
            for line in pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def cmdline(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return ""


# Calls of each kind timed back to back for the per-call medians.
REPEATS = 20


def all_pids():
    return {int(e.name) for e in pathlib.Path("/proc").iterdir() if e.name.isdigit()}


def started_by_system(before):
    """Processes a system started since `before`: our descendants, and the detached
    daemons and browsers (agent-browser's browser hangs off a daemon, not the server).
    Nothing else that happened to start meanwhile (a compiler, say) is counted."""
    mine = set(descendants(os.getpid())) - {os.getpid()}
    out = set()
    for pid in all_pids() - before - {os.getpid()}:
        try:
            cmd = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if pid in mine or "agent-browser" in cmd or "chrom" in cmd or "playwright" in cmd:
            out.add(pid)
    return out


def stop_new_processes(before):
    """Stops, by PID, whatever a system left running (agent-browser keeps a daemon)."""
    import signal
    leftover = started_by_system(before)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in leftover:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        time.sleep(0.3)
        leftover = {p for p in leftover if pathlib.Path(f"/proc/{p}").exists()}
        if not leftover:
            return


async def timed(session, tool, args):
    started = time.perf_counter()
    result = await session.call_tool(tool, args)
    ms = (time.perf_counter() - started) * 1000
    if getattr(result, "is_error", False) or getattr(result, "isError", False):
        raise RuntimeError(f"{tool} failed: {text_of(result)[:300]}")
    return ms, result


async def one_run(system, site):
    """One full pass over every metric for one system; returns {metric: value}."""
    a, b = system.ports
    url = lambda path, port=a: f"http://127.0.0.1:{port}/{path}"  # noqa: E731
    m = {}
    before = all_pids()
    try:
        return await measure(system, url, b, m, before)
    finally:
        stop_new_processes(before)


async def measure(system, url, b, m, before):
    started = time.perf_counter()
    errlog = open(system.log_path(), "w")
    async with stdio_client(system.params(), errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            m["spawn_to_initialize_ms"] = (time.perf_counter() - started) * 1000
            tools = await session.list_tools()
            listing = json.dumps([t.model_dump(mode="json", exclude_none=True) for t in tools.tools])
            m["tools_list_tokens"] = COUNT(listing)

            ms, _ = await timed(session, *system.navigate(url("login.html")))
            m["first_navigate_ms"] = ms
            ms, res = await timed(session, *system.snapshot())
            snap = text_of(res)
            m["snapshot_login_ms"], m["snapshot_login_bytes"], m["snapshot_login_tokens"] = ms, len(snap.encode()), COUNT(snap)
            ref = system.ref_of(snap, 'textbox "Username"')
            ms, res = await timed(session, *system.type(ref, "Username field", "alice"))
            m["type_ms"] = ms
            ref = system.ref_of(snap, 'button "Sign in"')
            ms, res = await timed(session, *system.click(ref, "Sign in button"))
            m["click_ms"], m["click_result_bytes"] = ms, len(text_of(res).encode())
            ms, res = await timed(session, *system.screenshot())
            m["screenshot_ms"], m["screenshot_bytes"] = ms, image_bytes(res)

            for name, path in [("login", "login.html"), ("article", "article.html"), ("admin", "admin?rows=2000")]:
                ms, res = await timed(session, *system.navigate(url(path)))
                m[f"navigate_{name}_ms"] = ms
                # What a navigation's own result costs the agent's context.
                m[f"navigate_{name}_result_tokens"] = COUNT(text_of(res))
                # What a snapshot of only what can be acted on costs (where there is one);
                # the table's after its own measures, so as not to warm them.
                if system.interactive_snapshot() and name != "admin":
                    _, res = await timed(session, *system.interactive_snapshot())
                    m[f"snapshot_{name}_interactive_tokens"] = COUNT(text_of(res))
            # The 2,000-row table: the default response, then the whole page (Airlock
            # pages onward from its cap; the peers return everything at once).
            ms, res = await timed(session, *system.snapshot())
            first = text_of(res)
            m["snapshot_table_ms"] = ms
            m["snapshot_table_default_bytes"], m["snapshot_table_default_tokens"] = len(first.encode()), COUNT(first)
            whole, page = first, first
            while (more := re.search(r"offset=(\d+) for the next page", page)) and system.name.startswith("airlock"):
                _, res = await timed(session, *system.snapshot(int(more.group(1))))
                page = text_of(res)
                whole += "\n" + page
            m["snapshot_table_full_bytes"], m["snapshot_table_full_tokens"] = len(whole.encode()), COUNT(whole)
            # A click in the large page: "Edit" in row 1000. What it costs is what the
            # page's change costs, not a walk of the whole page (issue #30's case).
            edit = system.ref_of(whole[whole.index("user1000@"):], 'button "Edit"')
            ms, res = await timed(session, *system.click(edit, "Edit button in row 1000"))
            m["table_click_ms"], m["table_click_result_bytes"] = ms, len(text_of(res).encode())
            if system.name.startswith("airlock"):
                m.update(stage_metrics("table_click", [ms], tool_calls(system, "browser_click")[-1:]))
            if system.interactive_snapshot():
                _, res = await timed(session, *system.interactive_snapshot())
                m["snapshot_admin_interactive_tokens"] = COUNT(text_of(res))
            ms, _ = await timed(session, *system.navigate(url(f"redirect?to=http://127.0.0.1:{b}/login.html")))
            m["navigate_redirect_ms"] = ms
            if system.interactive_snapshot():
                _, res = await timed(session, *system.interactive_snapshot())
                m["snapshot_redirect_interactive_tokens"] = COUNT(text_of(res))
            # Per request: the page times 60 sequential fetches itself (through Airlock's
            # egress proxy; direct for the peers and the raw-CDP floor).
            await timed(session, *system.navigate(url(f"fetches.html?n={floors.FETCHES}")))
            m["fetch_ms"] = await fetch_median(session, system)
            if system.name.startswith("airlock"):
                # Per-call medians over repeats: what the worker boundary adds shows
                # here (one call per run above is too few for a millisecond).
                await timed(session, *system.navigate(url("login.html")))
                _, res = await timed(session, *system.snapshot())
                snap = text_of(res)
                user, remember = system.ref_of(snap, 'textbox "Username"'), system.ref_of(snap, 'checkbox "Remember me"')
                times = {"snapshot": [], "type": [], "click": []}
                for _ in range(REPEATS):
                    times["snapshot"].append((await timed(session, *system.snapshot()))[0])
                    times["type"].append((await timed(session, *system.type(user, "Username field", "alice")))[0])
                    times["click"].append((await timed(session, *system.click(remember, "Remember me")))[0])
                for kind, values in times.items():
                    m[f"{kind}_p50_ms"] = statistics.median(values)
                # Where each click's and each type's time went: the stages the server
                # logs, and transport (what the client saw beyond the server's time).
                for kind, tool in (("click", "browser_click"), ("type", "browser_type")):
                    logged = tool_calls(system, tool)[-REPEATS:]
                    m.update(stage_metrics(kind, times[kind], logged))
                # The worker process alone (Chromium is counted in pss_mib either way).
                workers = [p for p in started_by_system(before) if "worker\x00--socket" in cmdline(p)]
                if workers:
                    m["worker_process_pss_mib"] = pss_mib(workers)
            if system.name == "airlock":
                # Session open with Chromium already running: a fresh context, and a
                # dedicated Chromium (the peers have no such call to compare).
                # After a pause such as a model's think time: Airlock refills its pool of
                # warm sessions only when no call has run for 250 ms (so refilling never
                # competes with an agent's actions), and this loop has had no such pause.
                await asyncio.sleep(1.0)
                for isolation in ("context", "process"):
                    await timed(session, "browser_session_close", {})
                    ms, _ = await timed(session, "browser_session_open", {"isolation": isolation})
                    m[f"session_open_{isolation}_ms"] = ms
            # Everything the system started (its server, browsers, daemons), not just
            # the server's own process tree: agent-browser's browser is a daemon's child.
            m["pss_mib"] = pss_mib(started_by_system(before))
    return m


def tool_calls(system, tool):
    """The `tool call` lines Airlock logged for `tool` so far, oldest first."""
    calls = []
    for line in system.log_path().read_text(errors="replace").splitlines():
        if '"tool call"' not in line:
            continue
        try:
            fields = json.loads(line)["fields"]
        except (ValueError, KeyError):
            continue
        if fields.get("tool.name") == tool:
            calls.append(fields)
    return calls


STAGES = ("resolve", "locate", "dispatch", "settle", "outcome", "diff", "render", "intent", "audit", "egress")


def stage_metrics(kind, client_ms, logged):
    """Medians of each stage of these calls and of their transport, in ms."""
    out = {}
    if not logged or len(logged) != len(client_ms):
        return out
    for stage in STAGES:
        values = [f.get(f"stage.{stage}_us") for f in logged]
        if all(v is not None for v in values):
            out[f"{kind}_stage_{stage}_ms"] = statistics.median(values) / 1000
    # The session's running state in a shared store (within the stages above and
    # "other": shown on its own, not added to them).
    shared = [f.get("stage.shared_us") for f in logged]
    if all(v is not None for v in shared):
        out[f"{kind}_stage_shared_ms"] = statistics.median(shared) / 1000
    out[f"{kind}_stage_transport_ms"] = statistics.median(
        c - f["duration_us"] / 1000 for c, f in zip(client_ms, logged))
    # What the server spent outside the named stages (admitting the call, its lease,
    # the risk gate, redaction, the log line).
    out[f"{kind}_stage_other_ms"] = statistics.median(
        (f["duration_us"] - sum(f.get(f"stage.{stage}_us") or 0 for stage in STAGES)) / 1000
        for f in logged)
    return out


async def fetch_median(session, system):
    deadline = time.time() + 20
    while time.time() < deadline:
        _, res = await timed(session, *system.page_text())
        found = re.search(r"fetch median ([\d.]+) ms done", text_of(res))
        if found:
            return float(found.group(1))
        await asyncio.sleep(0.1)
    raise RuntimeError("fetches.html did not finish")


def free_port():
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def http_server(system, port):
    """Starts `system` as a Streamable HTTP server on `port`; returns the process."""
    if system.name == "airlock":
        params = system.params()
        argv = [params.command, "serve", "--listen", f"127.0.0.1:{port}"]
        env, url = params.env, f"http://127.0.0.1:{port}/mcp"
    else:
        params = system.params()
        args = [a for a in params.args]
        argv = [params.command, *args, "--port", str(port), "--host", "127.0.0.1"]
        # Playwright MCP answers only to the Host it prints (localhost:PORT).
        env, url = params.env, f"http://localhost:{port}/mcp"
    process = await asyncio.create_subprocess_exec(
        *argv, env=env, cwd=system.tmp, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    import socket
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.1):
                return process, url
        except OSError:
            await asyncio.sleep(0.05)
    raise RuntimeError(f"{system.name} did not listen on {port}")


async def concurrent_sessions(system, count):
    """`count` MCP sessions over Streamable HTTP navigating at once: time until all
    have navigated, and PSS of everything the system started with them all open."""
    from contextlib import AsyncExitStack

    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    before = all_pids()
    port = free_port()
    process, url = await http_server(system, port)
    page = f"http://127.0.0.1:{system.ports[0]}/login.html"
    tool, args = system.navigate(page)
    try:
        async with AsyncExitStack() as stack:
            clients = [await stack.enter_async_context(Client(streamable_http_client(url), mode="legacy"))
                       for _ in range(count)]
            started = time.perf_counter()
            results = await asyncio.gather(*(c.call_tool(tool, args) for c in clients))
            elapsed = (time.perf_counter() - started) * 1000
            bad = [text_of(r)[:200] for r in results if r.is_error]
            if bad:
                raise RuntimeError(f"navigation failed: {bad[0]}")
            pss = pss_mib(started_by_system(before))
    finally:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except asyncio.TimeoutError:
            process.kill()
        stop_new_processes(before)
    return elapsed, pss


async def concurrency(system):
    """10 sessions at once, and what each session past the first costs in PSS."""
    m = {}
    _, one = await concurrent_sessions(system, 1)
    ms, ten = await concurrent_sessions(system, 10)
    m["sessions10_all_navigated_ms"], m["sessions10_pss_mib"] = ms, ten
    m["pss_per_added_session_mib"] = (ten - one) / 9
    return m


def summarize(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--systems", default="airlock,airlock-embedded,airlock-no-effects,airlock-signed,airlock-remote,airlock-postgres,"
                                              "playwright-mcp,agent-browser")
    parser.add_argument("--out", default=str(BENCH / "results/latest.json"))
    parser.add_argument("--airlock", default=str(AIRLOCK_BINARY[0]), help="the airlock binary")
    parser.add_argument("--airlock-before", help="an earlier airlock binary (the airlock-before system)")
    parser.add_argument("--concurrency", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure 10 concurrent sessions over Streamable HTTP")
    parser.add_argument("--airlock-warm", type=int, help="Airlock's [sessions] warm (default: its own)")
    parser.add_argument("--load", action=argparse.BooleanOptionalAction, default=True,
                        help="also run Airlock's load run (20 leased sessions x 20 actions) and idle capacity")
    parser.add_argument("--floors", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure raw-CDP floors (Chromium alone, Airlock's flags)")
    args = parser.parse_args()
    AIRLOCK_BINARY[0] = pathlib.Path(args.airlock).resolve()
    AIRLOCK_WARM[0] = args.airlock_warm
    if args.airlock_before:
        AIRLOCK_BEFORE[0] = pathlib.Path(args.airlock_before).resolve()
    ports, servers = serve_site()
    results = {}
    for name in args.systems.split(","):
        with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
            system = SYSTEMS[name](ports, tmp)
            runs = []
            for i in range(args.runs + 1):  # the first is a warm-up
                try:
                    m = await asyncio.wait_for(one_run(system, ports), timeout=180)
                except Exception as e:  # noqa: BLE001 - report and go on with the others
                    print(f"{name} run {i}: {e!r}", file=sys.stderr)
                    continue
                if i > 0 and name == "airlock" and args.floors:
                    # The proxy's cost per request: this run's fetch median less that
                    # of Chromium alone (Airlock's flags, no proxy), measured right after.
                    a = ports[0]
                    try:
                        direct = await asyncio.to_thread(floors.fetch_only, AIRLOCK_BINARY[0], CHROMIUM,
                                                         lambda p: f"http://127.0.0.1:{a}/{p}")
                        m["egress_overhead_per_request_ms"] = m["fetch_ms"] - direct
                    except Exception as e:  # noqa: BLE001
                        print(f"direct fetch run {i}: {e!r}", file=sys.stderr)
                if i > 0:
                    if args.concurrency and name in HTTP_SYSTEMS:
                        try:
                            m.update(await asyncio.wait_for(concurrency(system), timeout=300))
                        except Exception as e:  # noqa: BLE001
                            print(f"{name} concurrency run {i}: {e!r}", file=sys.stderr)
                            if name == "airlock":
                                raise  # Airlock's own harness must not rot quietly.
                    runs.append(m)
            if name == "airlock-remote" and args.load:
                for i in range(min(args.runs, 3)):
                    r = await asyncio.wait_for(load.leased_load_on_workers(AIRLOCK_BINARY[0], ports[0], CHROMIUM),
                                               timeout=900)
                    if i < len(runs):
                        runs[i].update(r)
            if getattr(system, "workers", None) is not None:
                system.workers.stop()
            if name == "airlock" and args.load:
                loads = []
                for i in range(min(args.runs, 3)):
                    loads.append(await asyncio.wait_for(
                        load.leased_load(AIRLOCK_BINARY[0], ports[0]), timeout=600))
                # Once: it fills the machine's memory budget.
                capacity = await asyncio.to_thread(
                    load.idle_capacity, AIRLOCK_BINARY[0], ports[0], descendants, pss_mib)
                for i, r in enumerate(runs):
                    if i < len(loads):
                        r.update(loads[i])
                    if i == 0:
                        r.update(capacity)
            metrics = sorted({k for r in runs for k in r})
            results[name] = {k: summarize([r.get(k) for r in runs]) for k in metrics}
            results[name]["runs"] = len(runs)
    if args.floors:
        a = ports[0]
        runs = []
        for i in range(args.runs + 1):
            before = all_pids()
            try:
                m = await asyncio.to_thread(floors.measure, AIRLOCK_BINARY[0], CHROMIUM,
                                            lambda p: f"http://127.0.0.1:{a}/{p}", descendants, pss_mib)
            except Exception as e:  # noqa: BLE001
                print(f"floor run {i}: {e!r}", file=sys.stderr)
                continue
            finally:
                stop_new_processes(before)
            if i > 0:
                runs.append(m)
        if runs:
            metrics = sorted({k for r in runs for k in r})
            results["floor"] = {k: summarize([r.get(k) for r in runs]) for k in metrics}
            results["floor"]["runs"] = len(runs)
    for s in servers:
        s.shutdown()
    report = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "runs": args.runs,
        "chromium": CHROMIUM,
        "systems": results,
    }
    out = pathlib.Path(args.out)
    over = over_budget(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(table(results))
    failed = [n for n, r in results.items() if r.get("runs") == 0]
    if failed:
        print(f"no successful run for: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)
    if over:
        print("\n".join(over), file=sys.stderr)
        sys.exit(1)


# What Airlock promises to cost a model's context, as a share of a peer's figure.
TOKEN_BUDGETS = [
    ("snapshot_login_tokens", "agent-browser", 1.0),
    ("tools_list_tokens", "playwright-mcp", 0.6),
]


def committed_median(system, metric):
    """`system`'s median of `metric` in the committed results: latest.json first, then
    the others by name. Token counts do not vary by machine, and a run of Airlock alone
    (as `make bench-smoke` makes) must still be held to the peers' figures."""
    files = sorted((BENCH / "results").glob("*.json"), key=lambda f: (f.name != "latest.json", f.name))
    for f in files:
        try:
            found = json.loads(f.read_text())["systems"][system][metric]["median"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if found is not None:
            return found
    return None


def over_budget(results):
    """The budgets Airlock's medians break. A peer not measured in this run is read
    from the committed results."""
    if "airlock" not in results:
        return []
    over = []
    for metric, peer, share in TOKEN_BUDGETS:
        ours = (results["airlock"].get(metric) or {}).get("median")
        theirs = ((results.get(peer) or {}).get(metric) or {}).get("median") or committed_median(peer, metric)
        if ours is None or theirs is None:
            continue
        if ours > theirs * share:
            over.append(f"over budget: {metric} is {ours:,.0f}, more than {share}x {peer}'s {theirs:,.0f}")
    return over


def fmt(v):
    if v is None:
        return "—"
    return f"{v:,.1f}" if isinstance(v, float) and v < 1000 else f"{v:,.0f}"


def table(results):
    names = list(results)
    metrics = sorted({k for n, r in results.items() if n != "floor" for k in r if k != "runs"})
    head = "| metric | " + " | ".join(f"{n} median (min–max)" for n in names)
    # The floor is a column to compare against, like a peer: Chromium alone.
    peers = [n for n in names if n != "airlock"]
    if "airlock" in results:
        head += "".join(f" | airlock / {p}" for p in peers)
    lines = [head + " |", "|" + "---|" * (1 + len(names) + (len(peers) if "airlock" in results else 0))]
    for k in metrics:
        row = [k]
        for n in names:
            s = results[n].get(k)
            row.append("—" if not s else f"{fmt(s['median'])} ({fmt(s['min'])}–{fmt(s['max'])})")
        if "airlock" in results:
            mine = results["airlock"].get(k)
            for p in peers:
                theirs = results[p].get(k)
                ok = mine and theirs and theirs["median"]
                row.append(f"{mine['median'] / theirs['median']:.2f}×" if ok else "—")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    asyncio.run(main())
