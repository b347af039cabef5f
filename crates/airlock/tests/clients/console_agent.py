"""The agent of the console test: on the official MCP Python SDK, it opens a page
whose title is markup, then clicks "Delete account" twice; the operator decides both
in the console (approve, then deny with a note), driven by tests/console/console.mjs.

Run by crates/airlock/tests/it/console.rs:
  console_agent.py MCP_URL FIXTURE_BASE_URL AGENT_TOKEN
Prints one line per check and "N passed, M failed" last.
"""

import asyncio
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}", flush=True)
    else:
        failed += 1
        print(f"FAIL {name}: {str(detail)[:2000]}", flush=True)


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


DELETE = {"role": "button", "name": "Delete account"}


async def never_asked(context, params):
    return None


async def main():
    mcp_url, base, agent_token = sys.argv[1:4]
    headers = {"Authorization": f"Bearer {agent_token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0, read=300.0)) as http:
        async with Client(streamable_http_client(mcp_url, http_client=http), mode="legacy",
                          elicitation_callback=never_asked) as agent:
            r = await agent.call_tool("browser_navigate", {"url": f"{base}/console-xss.html"})
            check("navigate", not r.is_error, text_of(r))
            r = await agent.call_tool("browser_click", DELETE)
            check("approved in the console: the click ran", not r.is_error and "deleted 1" in text_of(r), text_of(r))
            r = await agent.call_tool("browser_click", DELETE)
            t = text_of(r)
            check("denied in the console: approval_denied with the note",
                  r.is_error and t.startswith("approval_denied") and "not today" in t and "console:admin_key" in t, t)
            # 3. An operator takes the page over in the live view, types a password
            # and signs in, then hands it back; meanwhile every call is refused.
            # On a phone: its screenshots have three device pixels to a CSS pixel,
            # which the operator's clicks must be mapped through.
            await agent.call_tool("browser_session_close", {})
            r = await agent.call_tool("browser_session_open", {"device": "iphone-15"})
            check("a phone session opens", not r.is_error, text_of(r))
            r = await agent.call_tool("browser_navigate", {"url": f"{base}/console-login.html"})
            check("navigate to the login", not r.is_error, text_of(r))
            held = None
            for _ in range(250):
                r = await agent.call_tool("browser_snapshot", {})
                if r.is_error:
                    held = text_of(r)
                    break
                await asyncio.sleep(0.2)
            check("while the operator holds the page: session_held at once",
                  held is not None and held.startswith("session_held"), held)
            # The page may be released and taken again before the operator signs
            # in: the agent goes on until the page it gets back shows the sign-in.
            back = None
            for _ in range(500):
                r = await agent.call_tool("browser_snapshot", {})
                t = text_of(r)
                if not r.is_error and "signed in with" in t:
                    back = t
                    break
                if r.is_error and not t.startswith("session_held"):
                    back = t
                    break
                await asyncio.sleep(0.2)
            check("handed back: the next result says the page may have changed",
                  back is not None and "handed it back" in back, back)
            check("the operator's sign-in happened under the agent", back is not None and "signed in with 15 characters" in back, back)
            check("the field the operator typed into is masked", back is not None and 'textbox "Password"' in back and "••••" in back, back)
            check("what the operator typed is in no result", back is not None and "op-typed" not in back, back)
            # 4. The operator saved the login: a new session opens with it.
            r = await agent.call_tool("browser_session_close", {})
            check("session closed", not r.is_error, text_of(r))
            r = await agent.call_tool("browser_session_open", {"credentials": ["bank"]})
            check("a new session opens with the saved login", not r.is_error and "refus" not in text_of(r), text_of(r))
            r = await agent.call_tool("browser_navigate", {"url": f"{base}/cookie.html"})
            t = text_of(r)
            check("its cookie is injected, and redacted wherever the page shows it",
                  not r.is_error and "bank_session=[REDACTED:bank]" in t and "a81f3c9d" not in t, t)
    print(f"{passed} passed, {failed} failed", flush=True)


asyncio.run(main())
