// Vercel's AI SDK MCP client (@ai-sdk/mcp, pinned) against a real `airlock serve`, as
// the README's recipe has it: one fixed URL, `/mcp/b/<name>`, one browser across calls.
//
// Run by crates/airlock/tests/it/mcp_clients.rs:
//   node recipe.mjs MCP_URL FIXTURE_BASE_URL AGENT_TOKEN ADMIN_KEY
// - navigate, then snapshot sees the page; a second client on the URL sees it too;
// - a click the rules hold is approved at the console and its result arrives.
// Prints one line per check and "N passed, M failed".
import { createMCPClient } from '@ai-sdk/mcp';

const [mcpUrl, base, token, adminKey] = process.argv.slice(2);
const url = mcpUrl.replace(/\/$/, '') + '/b/vercel-agent';
const counts = { passed: 0, failed: 0 };
function check(name, ok, detail = '') {
  counts[ok ? 'passed' : 'failed'] += 1;
  console.log(ok ? `ok   ${name}` : `FAIL ${name}: ${String(detail).slice(0, 2000)}`);
}
const textOf = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const open = () =>
  createMCPClient({ transport: { type: 'http', url, headers: { Authorization: `Bearer ${token}` } } });

async function approvePending() {
  const root = mcpUrl.split('/mcp')[0];
  const headers = { Authorization: `Bearer ${adminKey}` };
  for (let i = 0; i < 400; i++) {
    const r = await fetch(`${root}/api/v1/approvals?status=pending`, { headers });
    const pending = (await r.json()).approvals;
    if (pending.length) {
      const ok = await fetch(`${root}/api/v1/approvals/${pending[0].id}/approve`, { method: 'POST', headers });
      return ok.status === 200;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

const client = await open();
// The tools as the SDK hands them to a model: each has an `execute`.
const tools = await client.tools();
check('tools() lists the browser tools', 'browser_navigate' in tools, Object.keys(tools));
const opts = { toolCallId: 't', messages: [] };
let r = await tools.browser_navigate.execute({ url: `${base}/login.html` }, opts);
check('navigate', !r.isError, textOf(r));
r = await tools.browser_snapshot.execute({}, opts);
check('the next call sees the page', textOf(r).includes('heading "Sign in"'), textOf(r));
await client.close();

const again = await open();
const same = await again.tools();
r = await same.browser_snapshot.execute({}, opts);
check('a new client on the same URL finds the same browser', textOf(r).includes('heading "Sign in"'), textOf(r));
await same.browser_navigate.execute({ url: `${base}/resolve.html` }, opts);
const click = same.browser_click.execute({ role: 'button', name: 'Delete account' }, opts);
check('the held click is approved at the console', await approvePending());
r = await click;
check('the approved click ran and its result arrived', textOf(r).includes('deleted 1'), textOf(r));
await same.browser_session_close.execute({}, opts);
await again.close();
console.log(`${counts.passed} passed, ${counts.failed} failed`);
process.exit(counts.failed ? 1 : 0);
