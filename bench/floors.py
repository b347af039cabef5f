"""Raw-CDP floors: what Chromium itself takes for each step Airlock's tools stand on,
with no client library and no Airlock logic in the way.

Chromium is started with exactly Airlock's flags (from `airlock doctor`) and driven
over `--remote-debugging-pipe` by the ~60-line client below. `measure()` returns
{metric: ms or MiB} under the same names as run.py's metrics, so run.py can print
Airlock / floor beside Airlock / peers.
"""

import json
import os
import pathlib
import shlex
import shutil
import subprocess
import tempfile
import threading
import time

# Sequential fetches per measurement (run.py's fetches.html load uses the same).
FETCHES = 100


class Pipe:
    """CDP over fds 3 (commands in) and 4 (replies out), NUL-framed JSON."""

    def __init__(self, binary, flags):
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()
        self.profile = tempfile.mkdtemp(prefix="airlock-floors-")

        def fds():
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        self.started = time.perf_counter()
        self.proc = subprocess.Popen([binary, *flags, f"--user-data-dir={self.profile}"],
                                     preexec_fn=fds, close_fds=False, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        os.close(cmd_r)
        os.close(out_w)
        self._next, self._replies, self._events = 0, {}, []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = b""
        while chunk := os.read(self._out_r, 1 << 20):
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self._events.append(msg)
                    self._cond.notify_all()

    def call(self, method, params=None, session=None, timeout=60):
        return self.wait(self.send(method, params, session), method, timeout)

    def send(self, method, params=None, session=None):
        """Sends a command without waiting for its reply: its id, for `wait`."""
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        return self._next

    def wait(self, id_, method="", timeout=60):
        with self._cond:
            if not self._cond.wait_for(lambda: id_ in self._replies, timeout):
                raise TimeoutError(method)
            reply = self._replies.pop(id_)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def wait_event(self, method, session, timeout=60):
        """Takes the first queued event `method` of `session`, waiting for it."""
        def take():
            for i, e in enumerate(self._events):
                if e.get("method") == method and e.get("sessionId") == session:
                    return self._events.pop(i)
            return None
        deadline = time.monotonic() + timeout
        with self._cond:
            while (event := take()) is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(method)
                self._cond.wait(left)
        return event

    def clear_events(self):
        with self._cond:
            self._events.clear()

    def close(self):
        try:
            self.call("Browser.close", timeout=2)
        except Exception:  # noqa: BLE001 - it is going away either way
            pass
        try:
            os.killpg(self.proc.pid, 9)
        except OSError:
            pass
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def ms_since(started):
    return (time.perf_counter() - started) * 1000


def airlock_flags(airlock_binary, chromium):
    """The flags Airlock starts `chromium` with, as `airlock doctor` prints them."""
    env = dict(os.environ, AIRLOCK_CHROME=chromium, AIRLOCK_DATA_DIR=tempfile.mkdtemp())
    out = subprocess.run([str(airlock_binary), "doctor"], capture_output=True, text=True, env=env).stdout
    for line in out.splitlines():
        if line.startswith("note  chromium flags: "):
            flags = shlex.split(line.removeprefix("note  chromium flags: "))
            # Airlock's worker runs Chromium as an unprivileged user, with its
            # sandbox; the floor runs it as this process, which as root needs none.
            if os.geteuid() == 0 and "--no-sandbox" not in flags:
                flags.append("--no-sandbox")
            return flags
    raise RuntimeError("airlock doctor printed no chromium flags")


def open_page(cdp):
    """A fresh context and page, attached: (session id, context id, ms for each step)."""
    started = time.perf_counter()
    context = cdp.call("Target.createBrowserContext", {"disposeOnDetach": True})["browserContextId"]
    context_ms = ms_since(started)
    started = time.perf_counter()
    target = cdp.call("Target.createTarget", {"url": "about:blank", "browserContextId": context})["targetId"]
    session = cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    target_ms = ms_since(started)
    return session, context, context_ms, target_ms


def navigate(cdp, session, url):
    cdp.clear_events()
    started = time.perf_counter()
    cdp.call("Page.navigate", {"url": url}, session)
    cdp.wait_event("Page.loadEventFired", session)
    return ms_since(started)


def navigate_paused(cdp, session, url):
    """`navigate`, with the requests that can carry an effect paused (as Airlock's
    default effect rules pause them) and each released the moment it is seen: what
    a pause costs Chromium itself, with no judging."""
    kinds = ["Document", "XHR", "Fetch", "Ping", "EventSource", "Other"]
    cdp.call("Fetch.enable", {"patterns": [{"urlPattern": "*", "resourceType": k, "requestStage": "Request"}
                                           for k in kinds]}, session)
    cdp.clear_events()
    started = time.perf_counter()
    cdp.send("Page.navigate", {"url": url}, session)
    deadline = time.monotonic() + 60
    while True:
        with cdp._cond:
            event = next((e for e in cdp._events if e.get("sessionId") == session
                          and e.get("method") in ("Fetch.requestPaused", "Page.loadEventFired")), None)
            if event is None:
                if not cdp._cond.wait(max(0.0, deadline - time.monotonic())):
                    raise TimeoutError("Page.loadEventFired")
                continue
            cdp._events.remove(event)
        if event["method"] == "Page.loadEventFired":
            break
        cdp.send("Fetch.continueRequest", {"requestId": event["params"]["requestId"]}, session)
    ms = ms_since(started)
    cdp.call("Fetch.disable", session=session)
    return ms


def table_click(cdp, session):
    """What Chromium itself takes to click `Edit` in row 1000 of the 2,000-row table:
    scroll it into view (reading where it is), then move, press and release sent
    together (as Airlock sends them), until the page's handler has run."""
    started = time.perf_counter()
    box = evaluate(cdp, session, """(() => {
        const b = [...document.querySelectorAll('tr')][1001].querySelector('button');
        b.scrollIntoView({block: 'center'});
        const r = b.getBoundingClientRect();
        return [r.x + r.width / 2, r.y + r.height / 2];
    })()""")
    sent = [cdp.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                  "clickCount": 1}, session)
            for kind in ("mouseMoved", "mousePressed", "mouseReleased")]
    for id_ in sent:
        cdp.wait(id_, "Input.dispatchMouseEvent")
    ms = ms_since(started)
    if evaluate(cdp, session, "[...document.querySelectorAll('tr')][1001].querySelector('button').textContent") != "Editing":
        raise RuntimeError("the floor's click did not reach the button")
    return ms


def evaluate(cdp, session, expression):
    return cdp.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)["result"].get("value")


def fetch_median(cdp, session, url):
    """The median of FETCHES sequential fetches, timed by the page."""
    navigate(cdp, session, url(f"fetches.html?n={FETCHES}"))
    deadline = time.time() + 30
    while time.time() < deadline:
        text = evaluate(cdp, session, "document.body.textContent") or ""
        if text.endswith("done"):
            return float(text.split()[2])
        time.sleep(0.05)
    raise TimeoutError("fetches.html did not finish")


def fetch_only(airlock_binary, chromium, url):
    """Just the direct fetch median, in a fresh Chromium: run right after each of
    Airlock's runs, so the proxy's cost is a difference of two measurements taken
    moments apart rather than minutes apart."""
    cdp = Pipe(chromium, airlock_flags(airlock_binary, chromium))
    try:
        session, _, _, _ = open_page(cdp)
        cdp.call("Page.enable", session=session)
        return fetch_median(cdp, session, url)
    finally:
        cdp.close()


def measure(airlock_binary, chromium, url, descendants, pss_mib):
    """One pass over every floor; `url(path)` names a fixture page."""
    m = {}
    cdp = Pipe(chromium, airlock_flags(airlock_binary, chromium))
    try:
        cdp.call("Browser.getVersion")
        m["launch_ms"] = ms_since(cdp.started)
        session, _, context_ms, target_ms = open_page(cdp)
        m["context_ms"], m["target_attach_ms"] = context_ms, target_ms
        started = time.perf_counter()
        cdp.call("Page.enable", session=session)
        cdp.call("Runtime.enable", session=session)
        m["page_enable_ms"] = ms_since(started)
        m["session_open_context_ms"] = context_ms + target_ms + m["page_enable_ms"]
        m["first_navigate_ms"] = m["launch_ms"] + m["session_open_context_ms"] + navigate(cdp, session, url("login.html"))
        m["navigate_login_ms"] = navigate(cdp, session, url("login.html"))

        started = time.perf_counter()
        evaluate(cdp, session, "1")
        m["evaluate_round_trip_ms"] = ms_since(started)
        evaluate(cdp, session, "document.querySelector('input').focus()")
        started = time.perf_counter()
        cdp.call("Input.insertText", {"text": "alice"}, session)
        m["type_ms"] = ms_since(started)
        started = time.perf_counter()
        for kind in ("mousePressed", "mouseReleased"):
            cdp.call("Input.dispatchMouseEvent", {"type": kind, "x": 5, "y": 5, "button": "left", "clickCount": 1}, session)
        m["click_ms"] = ms_since(started)
        started = time.perf_counter()
        cdp.call("Page.captureScreenshot", {"format": "png"}, session)
        m["screenshot_ms"] = ms_since(started)

        # The same navigations with requests paused and released at once: the
        # floor of what the default effect rules add to a page load.
        m["navigate_login_paused_ms"] = navigate_paused(cdp, session, url("login.html"))
        m["navigate_article_paused_ms"] = navigate_paused(cdp, session, url("article.html"))
        m["navigate_article_ms"] = navigate(cdp, session, url("article.html"))
        m["navigate_admin_ms"] = navigate(cdp, session, url("admin?rows=2000"))
        # Timed before the accessibility tree is asked for, which Airlock never does:
        # once asked, Chromium may keep it up to date on every change (on pages that
        # stayed open after it, the same click took 1.8x as long).
        m["table_click_ms"] = table_click(cdp, session)
        navigate(cdp, session, url("admin?rows=2000"))
        started = time.perf_counter()
        tree = cdp.call("Accessibility.getFullAXTree", session=session)
        m["ax_tree_table_ms"] = ms_since(started)
        # The floor of a snapshot built on Chromium's accessibility tree (Airlock's
        # walker does not use it, so it can come in under this).
        m["snapshot_table_ms"] = m["ax_tree_table_ms"]
        m["ax_tree_table_bytes"] = len(json.dumps(tree))

        # Per request, no proxy: the same fetch page Airlock loads through its proxy.
        m["fetch_ms"] = fetch_median(cdp, session, url)

        # PSS per added context holding the login page.
        navigate(cdp, session, url("login.html"))
        before = pss_mib(descendants(cdp.proc.pid))
        added = 5
        for _ in range(added):
            other, _, _, _ = open_page(cdp)
            cdp.call("Page.enable", session=other)
            navigate(cdp, other, url("login.html"))
        m["pss_per_added_session_mib"] = (pss_mib(descendants(cdp.proc.pid)) - before) / added
    finally:
        cdp.close()
    return m
