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

document.addEventListener("DOMContentLoaded", () => {
  tick();
  setInterval(tick, 1000);
  const main = document.getElementById("main");
  const every = Number(main && main.dataset.refresh);
  if (every > 0) setInterval(() => refresh(main).catch(() => {}), every);
});
