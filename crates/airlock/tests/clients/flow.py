"""A full agent flow against Airlock, driven by the official MCP Python SDK.

Run by crates/airlock/tests/it/mcp_clients.rs:
  flow.py stdio AIRLOCK_BINARY FIXTURE_BASE_URL MODE
  flow.py http  MCP_URL        FIXTURE_BASE_URL MODE [BEARER_TOKEN]
  flow.py concurrent MCP_URL   FIXTURE_BASE_URL COUNT
  flow.py shell AIRLOCK_BINARY FIXTURE_BASE_URL MODE   (with AIRLOCK_CONFIG selecting browser-shell)
  flow.py isolation MCP_URL    FIXTURE_BASE_URL auto
MODE is the SDK's connect mode: "legacy" (2025-11-25 initialize handshake) or
"2026-07-28" (stateless; over HTTP the flow runs at the session URL that
browser_session_open returns). Prints one line per check and exits non-zero on failure.
"""

import asyncio
import os
import base64
import re
import sys

import httpx2
from mcp import Client, StdioServerParameters

EXPECTED_TOOLS = {
    "browser_navigate", "browser_snapshot", "browser_click", "browser_type",
    "browser_fill_form", "browser_press_key", "browser_select_option", "browser_check",
    "browser_hover", "browser_scroll", "browser_wait_for", "browser_screenshot",
    "browser_read", "browser_tabs", "browser_back", "browser_forward", "browser_reload",
    "browser_session_open", "browser_session_close", "browser_resize", "browser_console_messages",
    "browser_handle_dialog", "browser_drag", "browser_network_requests",
    "browser_pdf",
}

passed = 0
failed = 0
DENIED_URL = None


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail[:2000]}")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def ref_of(text, needle):
    for line in text.splitlines():
        if needle in line:
            m = re.match(r"\s*- ((?:t\d+)?(?:f\d+)?e\d+) ", line)
            if m:
                return m.group(1)
    raise AssertionError(f"no ref for {needle!r} in:\n{text}")


async def flow(client, base):
    tools = (await client.list_tools()).tools
    names = {t.name for t in tools}
    check("tools/list has every browser tool", EXPECTED_TOOLS <= names, str(sorted(names)))
    by_name = {t.name: t for t in tools}
    check("snapshot is annotated read-only", by_name["browser_snapshot"].annotations.read_only_hint is True)
    check("click is annotated destructive", by_name["browser_click"].annotations.destructive_hint is True)
    check("click schema documents ref", "ref" in by_name["browser_click"].input_schema.get("properties", {}),
          str(by_name["browser_click"].input_schema))
    props = by_name["browser_click"].input_schema.get("properties", {})
    check("allowed values are enums", props.get("button", {}).get("enum") == ["left", "right", "middle"], str(props.get("button")))
    # Fields are named by their label too: typing and forms list role and name (a
    # client that sends only listed properties can use them); waits list timeout_ms.
    type_props = by_name["browser_type"].input_schema.get("properties", {})
    form_field = by_name["browser_fill_form"].input_schema.get("properties", {}).get("fields", {}).get("items", {}).get("properties", {})
    check("type and fill_form list role and name beside ref",
          {"ref", "role", "name"} <= set(type_props) and {"ref", "role", "name"} <= set(form_field),
          str(by_name["browser_type"].input_schema) + str(by_name["browser_fill_form"].input_schema))
    check("waits show their timeout_ms",
          all("timeout_ms" in by_name[t].input_schema.get("properties", {}) for t in ("browser_wait_for", "browser_handle_dialog")))
    record = by_name["browser_session_open"].input_schema.get("properties", {}).get("record", {})
    check("the schema offers only the recording modes this build takes", record.get("enum") == ["off", "transient", "audit"], str(record))

    r = await client.call_tool("browser_navigate", {"url": base + "/login.html"})
    t = text_of(r)
    origin = base
    check("navigate succeeds", not r.is_error, t)
    check("navigate returns a snapshot", 'heading "Sign in" [level=1]' in t, t)
    check("page content is fenced with a nonce, under a page line naming the URL",
          re.search(r'page: "Sign in" — ' + re.escape(origin) + r'/login.html[^\n]*\n<page [0-9]{6}>', t) is not None, t)

    r = await client.call_tool("browser_snapshot", {})
    snap = text_of(r)
    check("snapshot succeeds", not r.is_error and "textbox \"Username\"" in snap, snap)

    r = await client.call_tool("browser_click", {"ref": ref_of(snap, 'checkbox "Remember me"')})
    t = text_of(r)
    check("click by ref reports the change", not r.is_error and "[checked]" in t and "~ " in t, t)

    r = await client.call_tool("browser_type", {"ref": ref_of(snap, 'textbox "Username"'), "text": "alice"})
    t = text_of(r)
    check("type succeeds and never echoes the text", not r.is_error and "alice" not in t.split("<page ")[0], t)

    r = await client.call_tool("browser_type", {"ref": ref_of(snap, 'textbox "Password"'), "text": "pw-not-shown"})
    t = text_of(r)
    # The built-in risk rule refuses literal text into a password field (a stored
    # credential's placeholder is the way), and the refusal does not echo the text.
    check("a literal password is refused and never returned",
          r.is_error and t.startswith("policy_denied") and "literal-password" in t and "pw-not-shown" not in t, t)

    r = await client.call_tool("browser_press_key", {"key": "Enter"})
    t = text_of(r)
    check("press Enter submits the form", not r.is_error and "Signed in as alice" in t, t)

    r = await client.call_tool("browser_screenshot", {})
    images = [c for c in r.content if getattr(c, "type", "") == "image"]
    ok = bool(images) and images[0].mime_type == "image/png" and base64.b64decode(images[0].data)[:8] == b"\x89PNG\r\n\x1a\n"
    check("screenshot returns a PNG image", not r.is_error and ok, text_of(r))

    r = await client.call_tool("browser_pdf", {})
    docs = [c for c in r.content if getattr(c, "type", "") == "resource"]
    ok = bool(docs) and docs[0].resource.mime_type == "application/pdf" and base64.b64decode(docs[0].resource.blob)[:5] == b"%PDF-"
    check("pdf returns the page as a PDF resource", not r.is_error and ok, text_of(r))

    r = await client.call_tool("browser_resize", {"width": 390, "height": 844})
    check("resize sets the viewport", not r.is_error and "viewport is 390×844" in text_of(r), text_of(r))
    r = await client.call_tool("browser_screenshot", {})
    png = base64.b64decode([c for c in r.content if getattr(c, "type", "") == "image"][0].data)
    size = (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big"))
    check("the next screenshot has the new size", size == (390, 844), str(size))
    r = await client.call_tool("browser_console_messages", {"level": "debug"})
    t = text_of(r)
    check("console messages come back fenced as page content",
          not r.is_error and "console message" in t and "<page " in t, t)
    r = await client.call_tool("browser_snapshot", {"boxes": True, "depth": 2})
    check("a snapshot gives boxes for refs, to the depth asked", not r.is_error and "[box=" in text_of(r), text_of(r))
    r = await client.call_tool("browser_network_requests", {"filter": "login"})
    t = text_of(r)
    check("network requests list the page's own, fenced",
          not r.is_error and "GET 200 document" in t and "<page " in t, t)

    # Bad input: each gets a tool error with a code, and the session keeps working.
    # (Argument checks without a browser are airlock-mcp's tests/arguments.rs; these
    # are the ones a real client over HTTP and a live page add.)
    r = await client.call_tool("browser_click", {})
    check("missing target -> invalid_argument", r.is_error and text_of(r).startswith("invalid_argument:"), text_of(r))
    r = await client.call_tool("browser_click", {"ref": "e99999"})
    check("unknown ref -> ref_not_found", r.is_error and text_of(r).startswith("ref_not_found:"), text_of(r))
    r = await client.call_tool("browser_navigate", {"url": "file:///etc/passwd"})
    check("file: URL refused by policy", r.is_error and text_of(r).startswith("policy_denied: scheme `file:`"), text_of(r))
    r = await client.call_tool("browser_navigate", {"url": "http://169.254.169.254/latest/meta-data/"})
    check("cloud metadata refused", r.is_error and text_of(r).startswith("policy_denied: 169.254.169.254 is link-local (cloud metadata)"), text_of(r))
    if DENIED_URL:
        r = await client.call_tool("browser_navigate", {"url": DENIED_URL})
        check("loopback port not in allow_private refused", r.is_error and text_of(r).startswith("policy_denied: 127.0.0.1 is loopback"), text_of(r))
    r = await client.call_tool("browser_click", {"ref": 12})
    check("wrong type -> invalid_argument with structured content",
          r.is_error and text_of(r).startswith("invalid_argument:")
          and (r.structured_content or {}).get("error", {}).get("code") == "invalid_argument", text_of(r))
    # Tools other than browser_click list only `ref`, and take every target field.
    r = await client.call_tool("browser_hover", {"role": "checkbox", "name": "Remember me"})
    check("an unlisted target field is taken", not r.is_error and "hovering over" in text_of(r), text_of(r))
    try:
        r = await client.call_tool("browser_teleport", {})
        check("unknown tool -> error", r.is_error, text_of(r))
    except Exception as e:  # a JSON-RPC error is the other correct answer
        check("unknown tool -> error", True, str(e))

    r = await client.call_tool("browser_snapshot", {})
    check("still serving after bad input", not r.is_error and "Signed in as alice" in text_of(r), text_of(r))

    # A dialog holds the page until it is answered.
    await client.call_tool("browser_navigate", {"url": base + "/dialogs.html", "snapshot": "none"})
    r = await client.call_tool("browser_click", {"role": "button", "name": "Confirm"})
    check("a confirm dialog is reported open", not r.is_error and "is open and holds the page" in text_of(r), text_of(r))
    r = await client.call_tool("browser_snapshot", {})
    check("the page is refused while it is held -> dialog_open",
          r.is_error and text_of(r).startswith("dialog_open:"), text_of(r))
    r = await client.call_tool("browser_handle_dialog", {"accept": True})
    check("accepting answers it", not r.is_error and "confirm returned true" in text_of(r), text_of(r))

    await client.call_tool("browser_navigate", {"url": base + "/drag.html", "snapshot": "none"})
    r = await client.call_tool("browser_drag", {"from": {"selector": "#b"}, "to": {"role": "region", "name": "Done"}})
    check("drag drops an HTML5 drag source", not r.is_error and "dropped Task B on Done" in text_of(r), text_of(r))
    r = await client.call_tool("browser_drag", {"from": {"selector": "#b"}})
    check("drag without `to` -> invalid_argument", r.is_error and text_of(r).startswith("invalid_argument"), text_of(r))

    r = await client.call_tool("browser_session_close", {})
    check("session close", not r.is_error and "closed" in text_of(r), text_of(r))


async def one_of_many(url, base, n):
    """One of several concurrent clients: sets its own cookie and must only ever see it."""
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url), mode="legacy") as client:
        r = await client.call_tool("browser_navigate", {"url": f"{base}/cookie.html?set=client{n}"})
        first = text_of(r)
        r = await client.call_tool("browser_navigate", {"url": f"{base}/cookie.html"})
        second = text_of(r)
        expected = f"cookie=[flavor=client{n}] storage=[client{n}]"
        return n, expected in first and expected in second and not r.is_error, second


async def concurrent(url, base, count):
    results = await asyncio.gather(*(one_of_many(url, base, n) for n in range(count)))
    for n, ok, text in results:
        check(f"client {n} saw only its own cookie", ok, text)


async def isolation(url, base):
    """Stateless clients (the SDK's default mode, as in the README) never share a
    browser unless they name the same session URL."""
    async with Client(url) as a:
        r = await a.call_tool("browser_navigate", {"url": base + "/login.html"})
        t = text_of(r)
        check("an unnamed call runs", not r.is_error and 'heading "Sign in"' in t, t)
        check("an unnamed call says its browser was one-off", "one-off browser session" in t, t)
        t = text_of(await a.call_tool("browser_snapshot", {}))
        check("the next unnamed call starts afresh", "Sign in" not in t, t)
        r = await a.call_tool("browser_session_open", {})
        t = text_of(r)
        m = re.search(r"mcp_url: (\S+)", t)
        check("session open names the session", not r.is_error and m is not None, t)
    named = m.group(1)
    async with Client(named) as a2:
        await a2.call_tool("browser_navigate", {"url": base + "/login.html"})
        snap = text_of(await a2.call_tool("browser_snapshot", {}))
        r = await a2.call_tool("browser_type", {"ref": ref_of(snap, 'textbox "Username"'), "text": "typed-by-a"})
        check("the named session keeps its page", not r.is_error, text_of(r))
    async with Client(url) as b:
        t = text_of(await b.call_tool("browser_snapshot", {}))
        check("a client naming no session sees nothing of another's", "typed-by-a" not in t and "Sign in" not in t, t)
        r = await b.call_tool("browser_session_open", {})
        other = re.search(r"mcp_url: (\S+)", text_of(r)).group(1)
        check("each session open names a new session", other != named, other)
    async with Client(other) as b2:
        t = text_of(await b2.call_tool("browser_snapshot", {}))
        check("another named session is another browser", "typed-by-a" not in t, t)
        await b2.call_tool("browser_session_close", {})
    async with Client(named) as c:
        t = text_of(await c.call_tool("browser_snapshot", {}))
        check("a client naming the same session shares it", 'value="typed-by-a"' in t, t)
        await c.call_tool("browser_session_close", {})
        # Closed, the session URL stays closed: no fresh browser behind it.
        r = await c.call_tool("browser_navigate", {"url": base + "/login.html"})
        check("a closed session URL answers session_expired",
              r.is_error and text_of(r).startswith("session_expired:"), text_of(r))
    made_up = url.rstrip("/") + "/s/" + "0" * 32
    async with Client(made_up) as d:
        r = await d.call_tool("browser_snapshot", {})
        check("a made-up session URL is refused", r.is_error and text_of(r).startswith("session_expired:"), text_of(r))

    # A caller's own named browser: calls to /mcp/b/NAME share it with no session to
    # open first (what a stateless SDK with one fixed URL needs).
    alpha = url.rstrip("/") + "/b/alpha"
    async with Client(alpha) as e:
        r = await e.call_tool("browser_navigate", {"url": base + "/login.html"})
        check("a named browser runs a call, not one-off", not r.is_error and "one-off" not in text_of(r), text_of(r))
    async with Client(alpha) as e2:
        t = text_of(await e2.call_tool("browser_snapshot", {}))
        check("a named browser keeps its page across calls and clients", 'heading "Sign in"' in t, t)
    async with Client(url.rstrip("/") + "/b/beta") as f:
        t = text_of(await f.call_tool("browser_snapshot", {}))
        check("another name is another browser", "Sign in" not in t, t)
        await f.call_tool("browser_session_close", {})
    async with Client(url.rstrip("/") + "/b/no%20spaces") as g:
        r = await g.call_tool("browser_snapshot", {})
        check("a name that is not one is refused", r.is_error and text_of(r).startswith("invalid_argument"), text_of(r))
    async with Client(url) as h:
        t = text_of(await h.call_tool("browser_snapshot", {}))
        check("an unnamed call still runs one-off, and says where a lasting one is",
              "Sign in" not in t and "/mcp/b/" in t, t)
    async with Client(alpha) as e3:
        await e3.call_tool("browser_session_close", {})


async def shell(client, base):
    """The browser-shell profile: one tool, agent-browser style argv."""
    import json

    tools = (await client.list_tools()).tools
    check("browser-shell profile lists only browser-shell", [t.name for t in tools] == ["browser-shell"], str([t.name for t in tools]))

    async def sh(argv, session="work"):
        r = await client.call_tool("browser-shell", {"session_id": session, "argv": argv})
        return json.loads(text_of(r)), r

    out, _ = await sh(["open", base + "/login.html"])
    check("shell open", out["exit_code"] == 0 and 'heading "Sign in"' in out["stdout"], str(out))
    check("shell result shape", set(out) == {"session_id", "exit_code", "stdout", "stderr"} and out["session_id"] == "work", str(out))
    out, _ = await sh(["snapshot", "-i"])
    user = "@" + ref_of(out["stdout"], 'textbox "Username"')
    out, _ = await sh(["fill", user, "bob"])
    check("shell fill", out["exit_code"] == 0, str(out))
    out, _ = await sh(["press", "Enter"])
    check("shell press Enter submits", out["exit_code"] == 0 and "Signed in as bob" in out["stdout"], str(out))
    out, r = await sh(["screenshot"])
    check("shell screenshot returns an image", out["exit_code"] == 0 and any(getattr(c, "type", "") == "image" for c in r.content), str(out))
    for argv in (["eval", "document.cookie"], ["open", "--session", "other", base], ["snapshot", "--json"], ["open", "--cdp=9222", base], ["open", "file:///etc/passwd"]):
        out, _ = await sh(argv)
        check(f"shell refuses {argv}", out["exit_code"] == 2 and out["stderr"].startswith("usage:"), str(out))
    out, _ = await sh(["click", "@e99999"])
    check("shell tool error has exit 1 and a code", out["exit_code"] == 1 and out["stderr"].startswith("ref_not_found:"), str(out))
    out, _ = await sh(["snapshot"], session="other")
    check("another session_id is another session", out["exit_code"] == 0 and "Signed in" not in out["stdout"], str(out))
    out, _ = await sh(["snapshot"])
    check("the same session_id keeps its page", "Signed in as bob" in out["stdout"], str(out))
    out, _ = await sh(["close"])
    check("shell close", out["exit_code"] == 0, str(out))


async def main():
    global DENIED_URL
    kind, target, base, mode = sys.argv[1:5]
    DENIED_URL = sys.argv[6] if len(sys.argv) > 6 else None
    if kind == "shell":
        server = StdioServerParameters(command=target, args=["mcp"], env=dict(os.environ))
        async with Client(server, mode=mode) as client:
            await shell(client, base)
        print(f"{passed} passed, {failed} failed")
        sys.exit(1 if failed else 0)
    if kind == "isolation":
        await isolation(target, base)
        print(f"{passed} passed, {failed} failed")
        sys.exit(1 if failed else 0)
    if kind == "concurrent":
        await concurrent(target, base, int(mode))
        print(f"{passed} passed, {failed} failed")
        sys.exit(1 if failed else 0)
    token = (sys.argv[5] or None) if len(sys.argv) > 5 else None
    if kind == "stdio":
        server = StdioServerParameters(command=target, args=["mcp"], env=dict(os.environ))
        async with Client(server, mode=mode) as client:
            await flow(client, base)
    else:
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0, read=300.0)) as http:
            if mode != "legacy":
                # A stateless client names its browser session by the URL that
                # browser_session_open returns.
                async with Client(streamable_http_client(target, http_client=http), mode=mode) as client:
                    r = await client.call_tool("browser_session_open", {})
                    target = re.search(r"mcp_url: (\S+)", text_of(r)).group(1)
            async with Client(streamable_http_client(target, http_client=http), mode=mode) as client:
                await flow(client, base)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


asyncio.run(main())
