// The console end to end in Debian's Chromium, driven by playwright-core (never a
// downloaded browser). Run by crates/airlock/tests/it/console.rs while an agent on
// the MCP Python SDK (clients/console_agent.py) clicks "Delete account" twice:
//   node console.mjs BASE ADMIN_KEY AGENT_KEY SECRET_VALUE SCREENS_DIR OTHER_TENANT_ADMIN_KEY SITE
// (SITE: the fixture site, where a server-side task started over REST begins.)
// Prints one line per check and "N passed, M failed" last.
import { chromium } from "playwright-core";
import { readFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";

const [base, adminKey, agentKey, secretValue, screens, otherAdminKey, site] = process.argv.slice(2);
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
let passed = 0;
let failed = 0;
function check(name, ok, detail = "") {
  if (ok) {
    passed++;
    console.log(`ok   ${name}`);
  } else {
    failed++;
    console.log(`FAIL ${name}: ${String(detail).slice(0, 2000)}`);
  }
}

mkdirSync(screens, { recursive: true });
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
// The page's CSP is checked as a header below; bypassing it here lets axe in, and
// makes the XSS checks prove the escaping alone.
const context = await browser.newContext({ viewport: { width: 1200, height: 900 }, bypassCSP: true });
const page = await context.newPage();
const errors = [];
page.on("pageerror", (e) => errors.push(String(e)));
// Refusals this run provokes (401, 403) log "Failed to load resource"; a missing
// asset shows as a 404 below.
page.on("console", (m) => {
  if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) errors.push(m.text());
});
page.on("response", (r) => { if (r.status() === 404) errors.push(`404 ${r.url()}`); });

// Every page: no serious accessibility violation, the secret nowhere, a screenshot.
async function review(name) {
  await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return { violations: r.violations.filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`) };
  });
  check(`${name}: no serious accessibility violation`, result.violations && result.violations.length === 0,
    JSON.stringify(result));
  const html = await page.content();
  check(`${name}: the secret value is not on the page`, !html.includes(secretValue));
  await page.screenshot({ path: `${screens}/${name}.png`, fullPage: true });
}

try {
  // Unsigned: every page leads to sign-in; headers forbid framing and foreign code.
  let r = await page.goto(`${base}/console/approvals`);
  check("a page without a login leads to sign-in", page.url().endsWith("/console/sign-in"), page.url());
  const headers = r.headers();
  check("a strict Content-Security-Policy", (headers["content-security-policy"] || "").includes("script-src 'self'")
    && (headers["content-security-policy"] || "").includes("frame-ancestors 'none'"), JSON.stringify(headers));
  check("never framed, never cached", headers["x-frame-options"] === "DENY" && headers["cache-control"] === "no-store",
    JSON.stringify(headers));
  await review("sign-in");

  await page.fill("#key", "not-a-key-at-all");
  await page.click("button[type=submit]");
  check("a wrong key is told so", (await page.textContent("[role=alert]")).includes("not valid"));
  await page.fill("#key", agentKey);
  await page.click("button[type=submit]");
  check("the agent's key cannot sign in", (await page.textContent("[role=alert]")).includes("admin key"));
  check("no cookie for a refused key", (await context.cookies()).length === 0);

  await page.fill("#key", adminKey);
  await page.click("button[type=submit]");
  await page.waitForURL("**/console/sessions");
  const [cookie] = await context.cookies();
  check("signed in: an HttpOnly, SameSite=Strict cookie", cookie && cookie.httpOnly && cookie.sameSite === "Strict",
    JSON.stringify(cookie));
  check("the cookie is not the key", cookie && !cookie.value.includes(adminKey));

  // CSRF: a form without the token, and one from another origin, are refused.
  r = await page.evaluate(async () => (await fetch("/console/sessions/nope/end", { method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" }, body: "csrf=guess" })).status);
  check("a form without its CSRF token -> 403", r === 403, r);
  const csrf = await page.getAttribute("input[name=csrf]", "value");
  r = await fetch(`${base}/console/sessions/nope/end`, { method: "POST", redirect: "manual",
    headers: { cookie: `${cookie.name}=${cookie.value}`, origin: "http://evil.example",
      "content-type": "application/x-www-form-urlencoded" }, body: `csrf=${csrf}` });
  check("a form from another origin -> 403, even with the token", r.status === 403, r.status);
  r = await fetch(`${base}/console/sessions/nope/end`, { method: "POST", redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" }, body: `csrf=${csrf}` });
  check("a form without the cookie -> 401", r.status === 401, r.status);

  // The agent's first click waits for us: the approvals page shows it by itself.
  await page.goto(`${base}/console/approvals`);
  await page.waitForSelector("section.approval", { timeout: 60_000 });
  const card = page.locator("section.approval").first();
  const pageLine = await card.locator(".evidence figcaption").textContent();
  check("a page title full of markup stays text", pageLine.includes("<img src=x onerror="), pageLine);
  check("no element came out of it", await card.locator("figcaption img").count() === 0);
  check("no script ran", await page.evaluate(() => window.__xss === undefined));
  // It leads with what will happen to what, on which site; then the rule and tool.
  const heading = await card.locator("h2").textContent();
  check("the card leads with the action on its element", heading === "Click button “Delete account”", heading);
  check("and the site", /on 127\.0\.0\.1:\d+/.test(await card.locator(".site").textContent()));
  check("the rule is named", (await card.locator(".meta").textContent()).includes("rule destructive"));
  const blocks = await card.locator(".evidence h3").allTextContents();
  check("the blocks are labelled", blocks.includes("The element it acts on") && blocks.includes("What the agent asked (redacted)"), blocks);
  // At a laptop's size the decision is in view without scrolling.
  await page.setViewportSize({ width: 1366, height: 860 });
  const approveBox = await card.locator("button.approve").boundingBox();
  check("Approve and Deny are in view at 1366×860", approveBox && approveBox.y + approveBox.height <= 860, JSON.stringify(approveBox));
  check("the countdown runs", /\d+ s left/.test(await card.locator(".countdown").textContent()));
  check("the outlined screenshot shows", await card.locator("img").evaluate((img) => img.complete && img.naturalWidth > 100));
  await review("approvals");

  await page.goto(`${base}/console/sessions`);
  const row = page.locator("tbody tr").first();
  check("the session is listed with its pending approval", (await row.textContent()).includes("1 pending"),
    await row.textContent());
  await review("sessions");

  await page.goto(`${base}/console/approvals`);
  await page.click("section.approval button.approve");
  await page.waitForSelector("section.approval", { state: "detached", timeout: 10_000 }).catch(() => {});
  check("approved: the request leaves the queue", await page.locator("section.approval").count() === 0);

  // The second click: denied, with a note the agent is told.
  await page.waitForSelector("section.approval", { timeout: 60_000 });
  await page.fill("section.approval input[name=note]", "not today");
  await page.click("section.approval button.danger");
  await page.waitForSelector("table", { timeout: 10_000 });
  const decided = await page.locator("table").textContent();
  check("both decisions are listed with who made them", decided.includes("approved") && decided.includes("denied")
    && decided.includes("console:admin_key") && decided.includes("not today"), decided);
  check("decided lately names the element", decided.includes("Click button “Delete account”"), decided);

  // Audit: the chain is intact, filters narrow, export gives JSON lines.
  await page.goto(`${base}/console/audit?tool=browser_click`);
  const chainLine = await page.textContent(".chain");
  check("the chain is intact", chainLine.includes("Chain intact"), chainLine);
  const ownEvents = Number((chainLine.match(/(\d+) events/) || [])[1]);
  const kinds = await page.locator("tbody tr td:nth-child(5)").allTextContents();
  check("filtered by tool", kinds.length >= 2 && kinds.every((k) => k === "browser_click"), kinds);
  await review("audit");
  // Every call the risk stage judged has its decision, "allow" included.
  await page.goto(`${base}/console/audit?tool=browser_navigate`);
  const navDecisions = await page.locator("tbody tr td:nth-child(6)").allTextContents();
  check("the decision column is filled", navDecisions.length >= 1 && navDecisions.every((d) => d === "allow"), navDecisions);
  await page.goto(`${base}/console/audit?tool=browser_click`);
  const exported = await page.evaluate(async () => (await fetch(document.querySelector("a[download]").href)).text());
  const lines = exported.trim().split("\n").map((l) => JSON.parse(l));
  check("export: one JSON event a line", lines.length >= 2 && lines.every((e) => e.tool === "browser_click"), exported.slice(0, 500));

  // Replay: the session's steps in order, from the audit link.
  await page.click("tbody tr td:nth-child(4) a");
  await page.waitForURL("**/replay");
  const steps = await page.locator("ol.steps li").allTextContents();
  check("replay lists the session's steps", steps.some((s) => s.includes("browser_navigate"))
    && steps.filter((s) => s.includes("browser_click")).length >= 2, steps);
  const shots = page.locator("ol.steps img.thumb");
  check("replay shows each stored step's screenshot", await shots.count() >= 2
    && await shots.first().evaluate(async (img) => { await img.decode().catch(() => {}); return img.naturalWidth > 100; }),
    await shots.count());
  const thumb = await shots.first().boundingBox();
  check("as a thumbnail, the full image a click away", thumb.height <= 160 && thumb.width <= 256
    && await page.locator("ol.steps a:has(img.thumb)").count() === await shots.count(), JSON.stringify(thumb));
  check("each call's step says what it did to what", steps.some((s) => s.includes("Click button “Delete account”"))
    && steps.some((s) => s.includes("Open http://127.0.0.1")), steps);
  check("with its arguments", steps.some((s) => s.includes("double") && s.includes("ref")), steps);
  check("an intent whose call finished is not listed twice", !steps.some((s) => s.includes("tool_intent")), steps);
  await review("replay");

  await page.goto(`${base}/console/vault`);
  const vault = await page.textContent("table");
  check("the vault lists names and origins", vault.includes("demo") && vault.includes("http://127.0.0.1"), vault);
  await review("vault");

  // Live view: the agent opened a login page; the operator watches it, takes it
  // over (a second login cannot), signs in by hand and hands it back.
  await page.goto(`${base}/console/sessions`);
  await page.click("tbody tr a:text('Live')");
  await page.waitForFunction(() => document.getElementById("live-url").textContent.includes("console-login.html")
    && Number(document.getElementById("live").dataset.frames || 0) >= 1, null, { timeout: 60_000 });
  check("the live view shows the agent's page", (await page.textContent("#live-title")).includes("Bank sign-in"));
  const pageEvents = await page.locator("#live-events li").allTextContents();
  check("what happened in the session streams in", pageEvents.some((e) => e.startsWith("tab 0: opened")), pageEvents);
  check("the agent's last actions show", (await page.locator("#live-actions li").allTextContents())
    .some((a) => a.includes("tool_call · browser_")));
  await review("live");
  await page.click("button:text('Take over')");
  await page.waitForSelector("#live-type");
  check("taken over: the page says who holds it", (await page.textContent(".held")).includes("You hold this page"));

  const second = await browser.newContext({ bypassCSP: true });
  const other = await second.newPage();
  await other.goto(`${base}/console/sign-in`);
  await other.fill("#key", adminKey);
  await other.click("button[type=submit]");
  await other.waitForURL("**/console/sessions");
  await other.goto(page.url());
  check("another login sees it held and gets no Take over button",
    (await other.textContent(".held")).includes("holds this page") && await other.locator("button:text('Take over')").count() === 0);
  const otherCsrf = await other.getAttribute("input[name=csrf]", "value");
  r = await other.evaluate(async ([url, csrf]) => (await fetch(url, { method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" }, body: `csrf=${csrf}` })).status,
    [page.url().replace(/\/live$/, "/take-over"), otherCsrf]);
  check("one controller at a time: a second take-over -> 409", r === 409, r);
  // An admin may release a hold someone else left: the page goes back to the agent,
  // and the holder's live view says so.
  await other.click("button:text('Release their hold')");
  await other.waitForSelector("button:text('Take over')");
  check("another admin released the hold", (await other.locator(".held").count()) === 0);
  await page.waitForFunction(() => document.getElementById("live-state").textContent.includes("no longer hold"),
    null, { timeout: 15_000 });
  check("the former holder's live view says it lost the page", true);
  // A login that signs out while holding a page hands it back.
  await other.click("button:text('Take over')");
  await other.waitForSelector("#live-type");
  await other.click("text=Sign out");
  await other.waitForURL("**/console/sign-in");
  await second.close();
  await page.goto(page.url());
  check("signing out released that login's hold", await page.locator("button:text('Take over')").count() === 1,
    await page.textContent("main"));
  await page.click("button:text('Take over')");
  await page.waitForSelector("#live-type");
  await page.waitForFunction(() => Number(document.getElementById("live").dataset.frames || 0) >= 1, null, { timeout: 15_000 });

  // Another tenant's admin sees none of it: no session, approval, event or secret,
  // and this session's pages and controls are not found.
  const third = await browser.newContext({ bypassCSP: true });
  const stranger = await third.newPage();
  await stranger.goto(`${base}/console/sign-in`);
  await stranger.fill("#key", otherAdminKey);
  await stranger.click("button[type=submit]");
  await stranger.waitForURL("**/console/sessions", { timeout: 10_000 }).catch(() => {});
  check("another tenant's admin signs in", stranger.url().endsWith("/console/sessions"),
    `${otherAdminKey.slice(0, 6)}… ${stranger.url()} ${(await stranger.textContent("body")).slice(0, 300)}`);
  check("another tenant: no session listed", (await stranger.textContent("main")).includes("No session is open"));
  await stranger.goto(`${base}/console/approvals`);
  check("another tenant: no approval", (await stranger.textContent("main")).includes("Nothing waits"));
  await stranger.goto(`${base}/console/vault`);
  check("another tenant: no secret", (await stranger.textContent("main")).includes("holds no secret"));
  await stranger.goto(`${base}/console/audit`);
  const sessionId = page.url().split("/sessions/")[1].split("/")[0];
  check("another tenant: none of this tenant's events", !(await stranger.content()).includes(sessionId));
  // The chain is one for all tenants, but its count is the tenant's own: another
  // tenant's traffic is not readable from it.
  const strangerLine = await stranger.textContent(".chain");
  const strangerEvents = Number((strangerLine.match(/(\d+) events/) || [])[1]);
  check("another tenant's chain line counts only its own events",
    strangerEvents > 0 && strangerEvents < ownEvents / 2, `${strangerLine} vs ${ownEvents}`);
  for (const path of ["live", "replay"]) {
    const res = await stranger.goto(`${base}/console/sessions/${sessionId}/${path}`);
    check(`another tenant: this session's ${path} page is not found`, res.status() === 404, res.status());
  }
  const strangerCsrf = await stranger.evaluate(async () => {
    const html = await (await fetch("/console/sessions")).text();
    return new DOMParser().parseFromString(html, "text/html").querySelector("input[name=csrf]").value;
  });
  r = await stranger.evaluate(async ([url, csrf]) => (await fetch(url, { method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" }, body: `csrf=${csrf}` })).status,
    [`${base}/console/sessions/${sessionId}/end`, strangerCsrf]);
  check("another tenant cannot end it", r === 404, r);
  r = await stranger.evaluate(async ([url, csrf]) => (await fetch(url, { method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" }, body: `csrf=${csrf}` })).status,
    [`${base}/console/sessions/${sessionId}/take-over`, strangerCsrf]);
  check("another tenant cannot take it over", r === 404, r);
  await third.close();

  const act = async (what) => {
    await page.evaluate(() => { document.getElementById("live-state").textContent = ""; });
    await what();
    await page.waitForFunction(() => document.getElementById("live-state").textContent !== "", null, { timeout: 15_000 });
    return page.textContent("#live-state");
  };
  const said = await act(async () => {
    // The password field sits at (100..400, 100..140) in the page's CSS pixels; the
    // agent's session is an iPhone 15, whose frames have 3 device pixels to one.
    const box = await page.locator("#live").boundingBox();
    const natural = await page.locator("#live").evaluate((img) => [img.naturalWidth, img.naturalHeight]);
    await page.mouse.click(box.x + 250 * 3 * box.width / natural[0], box.y + 120 * 3 * box.height / natural[1]);
  });
  check("a click reaches the page", said === "Done.", said);
  const typed = "op-typed-7f3c91";
  let result = await act(async () => { await page.fill("#live-text", typed); await page.click("#live-type button[type=submit]"); });
  check("text reaches the field", result === "Done.", result);
  check("the text box is emptied at once", await page.inputValue("#live-text") === "");
  result = await act(() => page.click("#live-type button[data-key=Enter]"));
  check("a key reaches the page", result === "Done.", result);
  await page.waitForTimeout(1000); // a frame or two after the sign-in, for the screenshot
  await review("live-held");
  // Save login: the cookie the sign-in set goes into the vault; only its name shows.
  // Kept: the operator stays on the page, holding it.
  await page.click("details.save-login summary");
  await page.waitForFunction(() => document.getElementById("save-origins").value.startsWith("http://127.0.0.1"));
  await page.fill("#save-name", "bank");
  await page.check("input[name=keep]");
  await page.click("button:text('Save login')");
  await page.waitForURL("**/live?**");
  check("Save login, kept: still on the live page, still holding",
    (await page.textContent("main")).includes("Saved 1 cookies into bank. You still hold the page.")
    && (await page.textContent(".held")).includes("You hold this page"), await page.textContent("main"));
  // Not kept (the default): saved, and the page goes back to the agent.
  await page.click("details.save-login summary");
  await page.waitForFunction(() => document.getElementById("save-origins").value.startsWith("http://127.0.0.1"));
  await page.fill("#save-name", "bank");
  await page.click("button:text('Save login')");
  await page.waitForURL("**/console/vault?**");
  check("Save login stores the session's cookies and hands the page back",
    (await page.textContent("[role=status]")).includes("Saved 1 cookies into bank. The page went back to the agent."),
    await page.textContent("main"));
  const bankRow = await page.locator("tbody tr", { hasText: "bank" }).textContent();
  check("the vault lists the login by name, origin and field", bankRow.includes("cookies") && bankRow.includes("http://127.0.0.1"), bankRow);
  check("no cookie value anywhere in the console", !(await page.content()).includes("a81f3c9d"));
  await review("vault-saved");

  await page.goto(`${base}/console/audit`);
  const audit = await page.textContent("tbody");
  check("the operator's steps are on the record", audit.includes("operator_takeover") && audit.includes("operator_input")
    && audit.includes("operator_handback"), audit.slice(0, 2000));
  check("what the operator typed is not", !(await page.content()).includes(typed));
  check("nor the saved cookie's value", !(await page.content()).includes("a81f3c9d") && audit.includes("login_saved"));
  const all = await page.evaluate(async () => (await fetch("/console/audit/export")).text());
  check("nor in the exported log", !all.includes(typed) && !all.includes("a81f3c9d") && all.includes("operator_input"));
  const handbacks = all.trim().split("\n").map((l) => JSON.parse(l)).filter((e) => e.kind === "operator_handback");
  check("each way a hold ended is on the record", handbacks.some((e) => e.reason === "released" && e.holder && e.by)
    && handbacks.some((e) => e.reason === "console login ended") && handbacks.some((e) => !e.reason),
    JSON.stringify(handbacks));

  // A server-side task a backend runs over REST (a scripted model on loopback): the
  // console lists it, and its transcript shows each step with its screenshot.
  const api = async (path, body) => {
    const res = await fetch(`${base}${path}`, { method: body ? "POST" : "GET",
      headers: { authorization: `Bearer ${agentKey}`, "content-type": "application/json" },
      body: body && JSON.stringify(body) });
    return res.json();
  };
  const lease = await api("/api/v1/sessions", { user_id: "u-task", conversation_id: "c-task" });
  const instruction = "open page two <b id=injected>now</b>";
  const started = await api(`/api/v1/sessions/${lease.session_id}/tasks`,
    { instruction, start_url: `${site}/index.html` });
  const taskId = started.task;
  const done = await api(`/api/v1/sessions/${lease.session_id}/tasks/${taskId}?wait_secs=60`);
  check("the task finished", done.status === "finished" && done.steps === 1, JSON.stringify(done).slice(0, 500));
  await page.goto(`${base}/console/tasks`);
  const taskRow = await page.locator("tbody tr", { hasText: taskId }).textContent();
  check("the tasks list shows it finished, with its model and steps", taskRow.includes("finished")
    && taskRow.includes("scripted") && taskRow.includes(instruction), taskRow);
  check("its instruction stays text", await page.locator("#injected").count() === 0);
  await review("tasks");
  await page.click(`a[aria-label="Transcript of ${taskId}"]`);
  await page.waitForURL(`**/console/tasks/${taskId}`);
  const facts = await page.textContent("dl.task");
  check("the transcript says what it was asked and how it ended", facts.includes(instruction)
    && facts.includes("finished") && facts.includes("reached page two"), facts);
  const taskSteps = await page.locator("ol.steps li").allTextContents();
  check("each step is listed in order, the click after the start page", taskSteps.length >= 2
    && taskSteps.findIndex((t) => t.includes("browser_navigate")) < taskSteps.findIndex((t) => t.includes("browser_click"))
    && taskSteps.findIndex((t) => t.includes("browser_navigate")) >= 0, taskSteps.join("\n").slice(0, 1500));
  check("and only this task's steps", !taskSteps.some((t) => t.includes("Delete account")), taskSteps.join("\n").slice(0, 1500));
  // Thumbnails load lazily: each is brought into view, then its image awaited.
  const widths = [];
  for (const thumb of await page.locator("ol.steps img.thumb").all()) {
    await thumb.scrollIntoViewIfNeeded();
    widths.push(await thumb.evaluate((img) => img.decode().then(() => img.naturalWidth, () => 0)));
  }
  check("each step's recorded screenshot shows", widths.length >= 2 && widths.every((w) => w > 100), widths);
  await review("task");
  await page.click("text=Replay the whole session");
  check("the replay of its session is a click away", page.url().endsWith(`/console/sessions/${lease.session_id}/replay`), page.url());
  // (From outside the page: its 404s count as missing assets.)
  const signedIn = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
  r = await fetch(`${base}/console/tasks/task_0000000000000000`, { headers: { cookie: signedIn } });
  check("a task not on the record -> 404", r.status === 404, r.status);
  // Another tenant's admin sees neither the task nor its transcript.
  r = await fetch(`${base}/console/sign-in`, { method: "POST", redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded" }, body: `key=${encodeURIComponent(otherAdminKey)}` });
  const otherCookie = (r.headers.get("set-cookie") || "").split(";")[0];
  const otherList = await (await fetch(`${base}/console/tasks`, { headers: { cookie: otherCookie } })).text();
  check("another tenant's admin sees none of its tasks", otherCookie !== "" && !otherList.includes(taskId)
    && otherList.includes("No task on the record"), otherList.slice(0, 500));
  r = await fetch(`${base}/console/tasks/${taskId}`, { headers: { cookie: otherCookie } });
  check("nor its transcript", r.status === 404, r.status);

  // A phone's width: the approvals page still fits.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${base}/console/approvals`);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check("a phone's width does not scroll sideways", overflow <= 1, overflow);
  await page.screenshot({ path: `${screens}/approvals-phone.png`, fullPage: true });

  await page.click("text=Sign out");
  await page.waitForURL("**/console/sign-in");
  await page.goto(`${base}/console/sessions`);
  check("signed out: the login is gone", page.url().endsWith("/console/sign-in"), page.url());
  check("no script error on any page", errors.length === 0, errors.join("\n"));
} catch (e) {
  check("the run finished", false, e.stack || e);
} finally {
  await browser.close();
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
