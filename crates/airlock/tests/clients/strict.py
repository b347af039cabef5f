"""Airlock's tools as the model SDKs agent developers use see them, over stdio with the
official MCP Python SDK.

Run by crates/airlock/tests/it/mcp_clients.rs:
  strict.py AIRLOCK_BINARY FIXTURE_BASE_URL

- The OpenAI Agents SDK's own strict conversion (`ensure_strict_json_schema`, called
  as its MCP adapter calls it) takes every tool that has arguments; a tool with none
  has nothing to be strict about, and what makes it convert (`additionalProperties:
  false`) is what google-genai's MCP adapter cannot read (it fails on the boolean).
- google-genai's MCP adapter (`mcp_to_gemini_tool`) takes every tool.
- Calls made as a strict-mode model makes them — every listed key, `null` for the ones
  it does not mean — do what the same call without them does.
Prints one line per check and a JSON summary line; exits non-zero on failure.
"""

import asyncio
import copy
import json
import os
import sys

from agents.strict_schema import ensure_strict_json_schema
from google.genai._mcp_utils import mcp_to_gemini_tool
from mcp import Client, StdioServerParameters
from common import check, done, ref_of, text_of


def strict(schema):
    """The Agents SDK's MCP adapter's conversion (agents/mcp/util.py), or why not."""
    schema = copy.deepcopy(schema)
    empty = schema == {}
    if "properties" not in schema:
        schema["properties"] = {}
    try:
        return ensure_strict_json_schema(copy.deepcopy(schema), _reject_open_objects=not empty), None
    except Exception as e:  # the SDK logs and serves the tool non-strict
        return None, str(e)


def every_key(schema, given):
    """`given`, with `null` for every other key the strict schema makes required, at
    every depth, as a strict-mode model sends it."""
    out = dict(given)
    for key, prop in schema.get("properties", {}).items():
        if key not in out:
            out[key] = None
        elif prop.get("type") == "array" and isinstance(out[key], list):
            out[key] = [every_key(prop.get("items", {}), v) if isinstance(v, dict) else v for v in out[key]]
        elif prop.get("type") == "object" and isinstance(out[key], dict):
            out[key] = every_key(prop, out[key])
    return out


async def main():
    binary, base = sys.argv[1:3]
    server = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ))
    async with Client(server, mode="legacy") as client:
        tools = (await client.list_tools()).tools
        strict_ok, no_args, gemini_ok, schemas = [], [], [], {}
        for tool in tools:
            converted, why = strict(tool.input_schema)
            if converted is not None:
                strict_ok.append(tool.name)
                schemas[tool.name] = converted
            elif not tool.input_schema.get("properties"):
                no_args.append(tool.name)
            else:
                check(f"{tool.name} converts to strict", False, why)
            try:
                declared = mcp_to_gemini_tool(tool).function_declarations[0]
                names = set((declared.parameters.properties or {}).keys())
                if names == set(tool.input_schema.get("properties", {}).keys()):
                    gemini_ok.append(tool.name)
                else:
                    check(f"{tool.name} keeps its parameters for Gemini", False, str(names))
            except Exception as e:
                check(f"{tool.name} converts for Gemini", False, f"{type(e).__name__}: {e}")
        check("every tool with arguments converts to strict",
              len(strict_ok) + len(no_args) == len(tools), str(strict_ok))
        check("every tool converts for Gemini", len(gemini_ok) == len(tools), str(gemini_ok))

        async def as_strict(tool, given):
            return await client.call_tool(tool, every_key(schemas[tool], given))

        r = await as_strict("browser_navigate", {"url": base + "/login.html"})
        check("navigate with nulls", not r.is_error and 'heading "Sign in"' in text_of(r), text_of(r))
        r = await as_strict("browser_snapshot", {})
        snap = text_of(r)
        check("snapshot with nulls", not r.is_error and 'textbox "Username"' in snap, snap)
        r = await as_strict("browser_click", {"ref": ref_of(snap, 'checkbox "Remember me"')})
        check("click with nulls", not r.is_error and "[checked]" in text_of(r), text_of(r))
        r = await as_strict("browser_type", {"ref": ref_of(snap, 'textbox "Username"'), "text": "alice"})
        check("type with nulls", not r.is_error, text_of(r))
        r = await as_strict("browser_fill_form", {"fields": [{"ref": ref_of(snap, 'textbox "Username"'), "value": "bob"}]})
        check("fill_form with nulls at every depth", not r.is_error, text_of(r))
        r = await as_strict("browser_wait_for", {"text": "Sign in"})
        check("wait_for with nulls", not r.is_error, text_of(r))
        r = await as_strict("browser_press_key", {"key": "Enter"})
        check("press_key with nulls submits", not r.is_error and "Signed in as bob" in text_of(r), text_of(r))
        print(json.dumps({"tools": len(tools), "strict": len(strict_ok), "no_arguments": sorted(no_args),
                          "gemini": len(gemini_ok)}))
    done()


asyncio.run(main())
