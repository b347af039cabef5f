"""In-client approval: a held click put to the person at the agent's own client
(form elicitation, protocol 2025-11-25), answered by the official MCP Python SDK's
elicitation callback: approve, deny with a reason, decline, and dismiss.

Run by crates/airlock/tests/it/approvals_rest.rs:
  elicit.py stdio AIRLOCK_BINARY FIXTURE_BASE_URL
  elicit.py http  MCP_URL        FIXTURE_BASE_URL
Prints one line per check and exits non-zero on failure.
"""

import asyncio
import os
import sys

import httpx2
from mcp import Client, StdioServerParameters, types

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {str(detail)[:2000]}")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


DELETE = {"role": "button", "name": "Delete account"}
# What the person answers, one per held call, in order.
answers = []
asked = []


async def on_elicit(context, params):
    asked.append(params)
    return answers.pop(0)


async def flow(client, base):
    r = await client.call_tool("browser_navigate", {"url": f"{base}/resolve.html"})
    check("navigate", not r.is_error, text_of(r))

    answers.append(types.ElicitResult(action="accept", content={"approve": True}))
    r = await client.call_tool("browser_click", DELETE)
    check("approved in the client: the click ran", not r.is_error and "deleted 1" in text_of(r), text_of(r))
    q = asked[-1]
    message = getattr(q, "message", "")
    schema = getattr(q, "requested_schema", None) or getattr(q, "requestedSchema", {})
    check("the question names tool, target, rule and risk",
          "browser_click" in message and "Delete account" in message and "destructive" in message and "high" in message,
          message)
    check("the form asks approve (boolean)",
          schema.get("properties", {}).get("approve", {}).get("type") == "boolean", schema)

    answers.append(types.ElicitResult(action="accept", content={"approve": False, "reason": "wrong account"}))
    r = await client.call_tool("browser_click", DELETE)
    t = text_of(r)
    check("denied in the client -> approval_denied with the reason",
          r.is_error and t.startswith("approval_denied") and "wrong account" in t and "client:" in t, t)

    answers.append(types.ElicitResult(action="decline"))
    r = await client.call_tool("browser_click", DELETE)
    t = text_of(r)
    check("declined -> approval_denied", r.is_error and t.startswith("approval_denied") and "declined" in t, t)

    # Dismissed: nobody else decides either, so the wait runs out.
    answers.append(types.ElicitResult(action="cancel"))
    r = await client.call_tool("browser_click", DELETE)
    t = text_of(r)
    check("dismissed -> the other channels decide (here: none, so approval_timeout)",
          r.is_error and t.startswith("approval_timeout"), t)

    r = await client.call_tool("browser_snapshot", {})
    check("only the approved click ran", "deleted 1" in text_of(r), text_of(r))
    check("asked once per held call", len(asked) == 4, len(asked))


async def main():
    kind, target, base = sys.argv[1:4]
    if kind == "stdio":
        server = StdioServerParameters(command=target, args=["mcp"], env=dict(os.environ))
        async with Client(server, mode="legacy", elicitation_callback=on_elicit) as client:
            await flow(client, base)
    else:
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(timeout=httpx2.Timeout(60.0, read=300.0)) as http:
            async with Client(streamable_http_client(target, http_client=http), mode="legacy",
                              elicitation_callback=on_elicit) as client:
                await flow(client, base)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


asyncio.run(main())
