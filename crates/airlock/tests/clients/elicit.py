"""In-client approval: a held click put to the person at the agent's own client
(form elicitation, protocol 2025-11-25), answered by the official MCP Python SDK's
elicitation callback: approve, deny with a reason, decline, and dismiss.

Run by crates/airlock/tests/it/approvals_rest.rs:
  elicit.py stdio AIRLOCK_BINARY FIXTURE_BASE_URL MODE
  elicit.py http  MCP_URL        FIXTURE_BASE_URL MODE
MODE is "legacy" (2025-11-25: an elicitation/create request while the call waits)
or "2026-07-28" (stateless: an input-required result the SDK answers by retrying).
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


async def attacks(client):
    """The stateless era's requestState, attacked by a client driving rounds itself."""
    approve = {"approval": {"action": "accept", "content": {"approve": True}}}
    first = await client.session.call_tool("browser_click", DELETE, allow_input_required=True)
    state = getattr(first, "request_state", None)
    check("a held call ends with an input-required result and a sealed state",
          state is not None and "approval" in (getattr(first, "input_requests", None) or {}), first)

    async def retry(args, responses, state):
        return await client.session.call_tool("browser_click", args, input_responses=responses,
                                              request_state=state, allow_input_required=True)

    forged = state[:-2] + ("A" if state[-2] != "A" else "B") + state[-1]
    r = await retry(DELETE, approve, forged)
    check("a tampered requestState -> invalid_argument", getattr(r, "is_error", False)
          and text_of(r).startswith("invalid_argument"), r)
    swap = {"role": "button", "name": "Swap"}
    r = await retry(swap, approve, state)
    check("the state of one call approves no other -> invalid_argument",
          getattr(r, "is_error", False) and text_of(r).startswith("invalid_argument"), r)
    r = await retry(DELETE, approve, state)
    check("the real answer runs the click once", getattr(r, "is_error", True) is False
          and "deleted 2" in text_of(r), r)
    r = await retry(DELETE, approve, state)
    check("replayed -> approval_closed, nothing clicked",
          getattr(r, "is_error", False) and text_of(r).startswith("approval_closed"), r)
    # An answer sent without the state approves nothing: the call is held again.
    r = await retry(DELETE, approve, None)
    check("answers without the state approve nothing: asked again",
          getattr(r, "request_state", None) is not None and not getattr(r, "is_error", False), r)
    r = await client.call_tool("browser_snapshot", {})
    check("the page counted two clicks in all", "deleted 2" in text_of(r), text_of(r))


async def main():
    kind, target, base, mode = sys.argv[1:5]
    if kind == "stdio":
        server = StdioServerParameters(command=target, args=["mcp"], env=dict(os.environ))
        async with Client(server, mode=mode, elicitation_callback=on_elicit) as client:
            await flow(client, base)
    else:
        import re
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(timeout=httpx2.Timeout(60.0, read=300.0)) as http:
            if mode != "legacy":
                # A stateless client keeps its browser at the URL browser_session_open gives.
                async with Client(streamable_http_client(target, http_client=http), mode=mode) as client:
                    r = await client.call_tool("browser_session_open", {})
                    target = re.search(r"mcp_url: (\S+)", text_of(r)).group(1)
            async with Client(streamable_http_client(target, http_client=http), mode=mode,
                              elicitation_callback=on_elicit) as client:
                await flow(client, base)
                if mode != "legacy":
                    await attacks(client)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


asyncio.run(main())
