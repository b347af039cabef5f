"""Widgets nobody on the team wrote, side by side: MiniWoB++'s tasks (PyPI `miniwob`,
pinned in the Makefile), each episode scored by the page itself (its "Last reward").

One scripted agent per task drives every system through the same MCP client with the
same moves: read the snapshot, act on the ref of the line that names what to act on,
type into a field, drag one ref onto another. Where a system's snapshot gives no ref
for it, the agent uses what the system offers for visible words (Airlock's `text`
target, Playwright's `text=` selector); if it offers nothing, the episode fails. An
episode succeeds when the page's reward is above zero.

  python bench/widgets.py [--episodes 5] [--systems airlock,playwright-mcp] [--out F]
"""

import argparse
import asyncio
import functools
import http.server
import importlib.util
import json
import pathlib
import re
import sys
import tempfile
import threading

from mcp import ClientSession
from mcp.client.stdio import stdio_client

BENCH = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import run  # noqa: E402 - bench/run.py: the systems and how each is started

MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]


def serve_miniwob():
    """MiniWoB++'s pages (installed in .venv, not imported) on a loopback port."""
    root = pathlib.Path(importlib.util.find_spec("miniwob").submodule_search_locations[0]) / "html"

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


REF = re.compile(r"^\s*- ((?:t\d+)?(?:f\d+)?e\d+) |\[ref=(\w+)\]")


def ref_on(line):
    m = REF.search(line)
    return (m.group(1) or m.group(2)) if m else None


class Agent:
    """The moves every task's script makes, in one system's dialect."""

    def __init__(self, session, system):
        self.session, self.system = session, system
        self.airlock = system.name.startswith("airlock")

    async def call(self, tool, args):
        result = await self.session.call_tool(tool, args)
        text = run.text_of(result)
        if getattr(result, "isError", False) or getattr(result, "is_error", False):
            raise RuntimeError(f"{tool}: {text[:200]}")
        return text

    async def snapshot(self):
        return await self.call(*self.system.snapshot())

    async def navigate(self, url):
        await self.call(*self.system.navigate(url))

    async def click(self, ref):
        await self.call(*self.system.click(ref, "element"))

    async def type(self, ref, text):
        # Every system's browser_type replaces what the field holds (Playwright's
        # convention, Airlock's default).
        tool, args = self.system.type(ref, "field", text)
        await self.call(tool, args)

    async def click_words(self, page, words, exact=True):
        """The ref on the line showing `words`; else the system's own way to name
        an element by its text."""
        for line in page.splitlines():
            ref = ref_on(line)
            shown = line.rstrip().endswith(f": {words}") or f'"{words}"' in line
            if ref and (shown if exact else words in line):
                return await self.click(ref)
        if self.airlock:
            return await self.call("browser_click", {"text": words})
        # Playwright's exact text selector (getByText with exact: true).
        return await self.call("browser_click", {"element": words, "target": f"text={json.dumps(words)}"})

    async def drag(self, a, b):
        if self.airlock:
            await self.call("browser_drag", {"from": {"ref": a}, "to": {"ref": b}})
        else:
            await self.call("browser_drag", {"startElement": "item", "startTarget": a,
                                             "endElement": "item", "endTarget": b})

    async def wait(self, seconds):
        if self.airlock:
            await self.call("browser_wait_for", {"time_ms": int(seconds * 1000)})
        else:
            await self.call("browser_wait_for", {"time": seconds})


def line_with(page, *needles):
    for line in page.splitlines():
        if ref_on(line) and all(n in line for n in needles):
            return line
    raise RuntimeError(f"no line with {needles}")


def words(line):
    """The page's words on a snapshot line: what follows its role, ref and flags."""
    text = line.split(": ", 1)[1] if ": " in line else ""
    # Playwright's snapshot is YAML: a value holding a colon or quote comes quoted.
    if "- text:" not in line and len(text) > 1 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return text


def prompt(page, starts):
    """The task's words: the line holding `starts`, and the lines of bare text that
    continue it (Airlock splits text at each inline element; Playwright keeps one)."""
    # Only the page's own words: not a peer's header (its title names the task).
    lines = page.split("### Snapshot", 1)[-1].splitlines()
    for i, line in enumerate(lines):
        if starts in line:
            out = [words(line) or line]
            for nxt in lines[i + 1:]:
                if ref_on(nxt) or "- text: " not in nxt:
                    break
                out.append(words(nxt))
            return "".join(out)
    raise RuntimeError(f"no task {starts!r}")


def named(page, kinds):
    """(ref, words) of each line of one of `kinds` (its words on the line, or on the
    line below it, where Playwright puts an item's text)."""
    lines = page.splitlines()
    out = []
    for i, line in enumerate(lines):
        if any(f" {k}" in line or f"- {k}" in line for k in kinds) and ref_on(line):
            shown = words(line)
            if not shown and i + 1 < len(lines):
                below = lines[i + 1]
                shown = words(below)
                line = below if ref_on(below) and not shown == "" else line
            out.append((ref_on(line), shown))
    return out


async def click_link(a, page):
    word = prompt(page, "Click on the link").split('"')[1]
    await a.click_words(page, word)


async def click_tab(a, page):
    tab = re.search(r"Tab #\d+", prompt(page, "Click on Tab")).group(0)
    await a.click_words(page, tab)


async def click_collapsible(a, page):
    await a.click(ref_on(line_with(page, 'tab "Section')))
    page = await a.snapshot()
    await a.click(ref_on(line_with(page, 'button "Submit"')))


def field(page):
    for line in page.splitlines():
        ref = ref_on(line)
        if ref and "Submit" not in line and "START" not in line and not re.search(r"\b(link|button|generic)\b", line):
            return ref
    raise RuntimeError("no field")


async def enter_value(a, page, pattern):
    value = re.search(pattern, prompt(page, "Enter")).group(1)
    await a.type(field(page), value)
    await a.click(ref_on(line_with(page, 'button "Submit"')))


async def enter_date(a, page):
    await enter_value(a, page, r"Enter\s*(\d+/\d+/\d+)")


async def enter_time(a, page):
    await enter_value(a, page, r"Enter\s*(\d+:\d+ [AP]M)")


async def drag_items(a, page):
    task = prompt(page, "Drag ")
    items = named(page, ["listitem"])
    if not items:
        raise RuntimeError("no item has a ref")
    name = re.search(r"Drag (\S+)", task).group(1)
    i = [n for _, n in items].index(name)
    if "down by one" in task:
        j = i + 1
    elif "up by one" in task:
        j = i - 1
    elif "to the top" in task:
        j = 0
    elif "to the bottom" in task:
        j = len(items) - 1
    else:
        j = int(re.search(r"(\d+)\w\w position", task).group(1)) - 1
    await a.drag(items[i][0], items[j][0])


async def use_autocomplete(a, page):
    quoted = prompt(page, "starts with").split('"')
    start, end = quoted[1], (quoted[3] if len(quoted) > 3 else "")
    box = ref_on(line_with(page, "Tags"))
    await a.type(box, start)
    # The list opens after the widget's own delay, later on a loaded machine: look
    # again for a few seconds, as a person waits for it (the same for every system).
    for _ in range(6):
        await a.wait(0.5)
        page = await a.snapshot()
        shown = next(
            (s for _, s in named(page, ["listitem", "menuitem", "option"])
             if s.startswith(start) and s.endswith(end) and s != start),
            None,
        )
        if shown:
            await a.click_words(page, shown)
            break
    else:
        raise RuntimeError("no suggestion")
    page = await a.snapshot()
    await a.click(ref_on(line_with(page, 'button "Submit"')))


async def use_spinner(a, page):
    value = re.search(r"Select (-?\d+)", prompt(page, "with the spinner")).group(1)
    await a.type(ref_on(line_with(page, "spinbutton")), value)
    await a.click(ref_on(line_with(page, 'button "Submit"')))


async def choose_date(a, page):
    m, d, y = map(int, re.search(r"(\d+)/(\d+)/(\d+)", prompt(page, "as the date")).groups())
    await a.click(field(page))
    page = await a.snapshot()
    month = next(i + 1 for i, name in enumerate(MONTHS) if re.search(rf"\b{name}\b", page))
    year = int(re.search(r"\b(19|20)\d\d\b", page.split(MONTHS[month - 1], 1)[1]).group(0))
    steps = (y * 12 + m) - (year * 12 + month)
    for _ in range(abs(steps)):
        await a.click_words(page, "Prev" if steps < 0 else "Next")
        page = await a.snapshot()
    await a.click(ref_on(line_with(page, f'link "{d}"')))
    page = await a.snapshot()
    await a.click(ref_on(line_with(page, 'button "Submit"')))


TASKS = {
    "click-link": click_link,
    "click-tab": click_tab,
    "click-collapsible": click_collapsible,
    "enter-date": enter_date,
    "enter-time": enter_time,
    "drag-items": drag_items,
    "use-autocomplete": use_autocomplete,
    "use-spinner": use_spinner,
    "choose-date": choose_date,
}


def reward_of(page):
    at = page.find("Last reward:")
    m = re.search(r"(?<![\w.])(-?\d+\.\d+)", page[at:]) if at >= 0 else None
    return float(m.group(1)) if m else None


async def episodes(system, port, tasks, count):
    """{task: episodes that scored} for one system."""
    scored = {}
    async with stdio_client(system.params(), errlog=open(system.log_path(), "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            a = Agent(session, system)
            for task in tasks:
                scored[task] = 0
                for _ in range(count):
                    try:
                        await a.navigate(f"http://127.0.0.1:{port}/miniwob/{task}.html")
                        page = await a.snapshot()
                        await a.click_words(page, "START")
                        page = await a.snapshot()
                        await TASKS[task](a, page)
                        reward = reward_of(await a.snapshot())
                        if reward is not None and reward > 0:
                            scored[task] += 1
                        else:
                            print(f"{system.name} {task}: reward {reward} ({prompt(page, '')[:120]})", file=sys.stderr)
                    except Exception as e:  # noqa: BLE001 - a failed episode is a result
                        print(f"{system.name} {task}: {e}", file=sys.stderr)
                    if a.airlock:
                        # A fresh session per episode: a session's action budget is 100.
                        await a.call("browser_session_close", {})
    return scored


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--systems", default="airlock,playwright-mcp")
    p.add_argument("--airlock", default=str(run.ROOT / "target/release/airlock"))
    p.add_argument("--out", default=str(BENCH / "results/widgets.json"))
    args = p.parse_args()
    run.AIRLOCK_BINARY[0] = pathlib.Path(args.airlock)
    server = serve_miniwob()
    port = server.server_address[1]
    results = {}
    for name in args.systems.split(","):
        tmp = tempfile.mkdtemp(prefix=f"bench-widgets-{name}-")
        system = run.SYSTEMS[name]((port, port), tmp)
        before = run.all_pids()
        try:
            results[name] = await asyncio.wait_for(episodes(system, port, list(TASKS), args.episodes), 1800)
        finally:
            run.stop_new_processes(before)
    server.shutdown()
    total = args.episodes * len(TASKS)
    lines = ["| task | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for task in TASKS:
        lines.append(f"| {task} | " + " | ".join(f"{r[task]}/{args.episodes}" for r in results.values()) + " |")
    lines.append("| **all** | " + " | ".join(f"**{sum(r.values())}/{total}**" for r in results.values()) + " |")
    print("\n".join(lines))
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"episodes": args.episodes, "tasks": list(TASKS), "systems": results}, indent=2) + "\n")
    # A system that scored nothing at all means the harness broke, not the system.
    broken = [n for n, r in results.items() if not sum(r.values())]
    if broken:
        print(f"no episode scored for: {', '.join(broken)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    asyncio.run(main())
