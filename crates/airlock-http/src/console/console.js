// Airlock console: countdowns, and live pages (sessions, approvals) that refresh
// themselves while nobody is typing. No page content is ever parsed as script: the
// server escapes it, and the Content-Security-Policy allows only this file.
"use strict";

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll(".countdown[data-expires]")) {
    const left = Math.max(0, Math.round((Number(el.dataset.expires) - now) / 1000));
    el.textContent = left > 0 ? `${left} s left` : "expired";
  }
}

async function refresh(main) {
  // Never under an operator's hands: a focused field or an open form keeps the page.
  const active = document.activeElement;
  if (document.hidden || (active && main.contains(active) && active.matches("input, select, textarea"))) return;
  const response = await fetch(location.href, { credentials: "same-origin", headers: { "accept": "text/html" } });
  if (!response.ok || response.redirected) return;
  const next = new DOMParser().parseFromString(await response.text(), "text/html").getElementById("main");
  if (next && next.innerHTML !== main.innerHTML) {
    main.replaceChildren(...next.childNodes);
    tick();
  }
}

// The live view: frames and status over the page's own WebSocket; once the operator
// holds the page, their clicks (in the page's CSS pixels), keys and text go back.
function live(img) {
  const id = img.dataset.session;
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const ws = new WebSocket(`${scheme}://${location.host}/console/sessions/${encodeURIComponent(id)}/live/ws`);
  ws.binaryType = "blob";
  const say = (text) => { document.getElementById("live-state").textContent = text; };
  const send = (message) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message)); };
  let shown = null;
  // Clicks are in the page's CSS pixels; the image is in device pixels (more of them
  // on a high-density device), so the server says the viewport.
  let viewport = null;
  ws.onmessage = (event) => {
    if (typeof event.data !== "string") {
      const next = URL.createObjectURL(event.data);
      img.src = next;
      if (shown) URL.revokeObjectURL(shown);
      shown = next;
      img.dataset.frames = String(Number(img.dataset.frames || 0) + 1);
      return;
    }
    const m = JSON.parse(event.data);
    if (m.ended) say("The session ended.");
    if (m.signed_out) say("This console login ended; sign in again.");
    if (img.dataset.held === "1" && m.mine === false) {
      say("You no longer hold this page: it went back to the agent. Reload to take it over again.");
    }
    if (m.error) say(m.error);
    if (m.done) say("Done.");
    if (m.viewport) viewport = m.viewport;
    if (m.events) {
      // What happened in the session, newest first, as it happened.
      const list = document.getElementById("live-events");
      const lines = m.missed ? [...m.events, `(${m.missed} earlier events not shown)`] : m.events;
      for (const line of lines) {
        const li = document.createElement("li");
        li.textContent = line;
        list.prepend(li);
      }
      while (list.children.length > 20) list.lastElementChild.remove();
    }
    if (m.url !== undefined) {
      document.getElementById("live-title").textContent = `“${m.title}”`;
      document.getElementById("live-url").textContent = m.url;
      const origins = document.getElementById("save-origins");
      if (origins && !origins.value && /^https?:/.test(m.url)) origins.value = new URL(m.url).origin;
      const list = document.getElementById("live-actions");
      list.replaceChildren(...m.actions.map((a) => { const li = document.createElement("li"); li.textContent = a; return li; }));
    }
  };
  ws.onclose = () => say("The live view closed; reload to reconnect.");
  document.addEventListener("visibilitychange", () => send({ t: document.hidden ? "pause" : "resume" }));
  if (img.dataset.held !== "1") return;
  img.addEventListener("click", (event) => {
    const box = img.getBoundingClientRect();
    const [width, height] = viewport || [img.naturalWidth, img.naturalHeight];
    const x = (event.clientX - box.left) * (width / box.width);
    const y = (event.clientY - box.top) * (height / box.height);
    send({ t: "click", x: Math.round(x), y: Math.round(y) });
  });
  const form = document.getElementById("live-type");
  const text = document.getElementById("live-text");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send({ t: "text", v: text.value });
    text.value = "";
  });
  for (const button of form.querySelectorAll("button[data-key]")) {
    button.addEventListener("click", () => send({ t: "key", k: button.dataset.key }));
  }
}

document.addEventListener("DOMContentLoaded", () => {
  // A login's one-time link carries its token in the fragment, which no request
  // line holds: the form takes it from there.
  const token = document.getElementById("link-token");
  if (token && location.hash.length > 1) token.value = location.hash.slice(1);
  const view = document.getElementById("live");
  if (view) live(view);
  tick();
  setInterval(tick, 1000);
  const main = document.getElementById("main");
  const every = Number(main && main.dataset.refresh);
  if (every > 0) setInterval(() => refresh(main).catch(() => {}), every);
});
