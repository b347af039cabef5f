"""The README's stdio client configuration and tool calls, run as written.

Run by crates/airlock/tests/it/readme.rs:
  readme_stdio.py SERVER_JSON CALLS_JSON
SERVER_JSON is the README's `mcpServers.airlock` entry ({"command", "args"}) with its
paths filled in; CALLS_JSON is the README's tool calls ([{"name", "arguments"}]). The
server gets this process's environment. Prints each result, then a snapshot of the
page it ended on; exits non-zero if any call failed.
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main():
    server = json.loads(sys.argv[1])
    calls = json.loads(sys.argv[2])
    params = StdioServerParameters(command=server["command"], args=server["args"], env=dict(os.environ))
    failed = False
    async with Client(params) as client:
        for call in calls + [{"name": "browser_snapshot", "arguments": {}}]:
            result = await client.call_tool(call["name"], call["arguments"])
            print(f"--- {call['name']} {'FAILED' if result.is_error else 'ok'}")
            print(text_of(result))
            failed = failed or result.is_error
    sys.exit(1 if failed else 0)


asyncio.run(main())
