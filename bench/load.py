"""Airlock under load, as a platform runs it: sessions leased per (user, conversation)
over REST and driven over Streamable HTTP by the official MCP Python SDK.

- `leased_load`: N leased sessions at once, each running M actions (navigate, type,
  click, snapshot in turn); per-action latency p50/p95 and errors.
- `idle_capacity`: leases sessions ten at a time (each on a small page, then idle)
  until the gateway and all its Chromium processes pass a PSS budget; how many fit.

Run from bench/run.py (`--load`), which passes its PSS helpers.
"""

import asyncio
import json
import os
import pathlib
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Gateway:
    """`airlock serve` on a free port with its own data dir, a config allowing the
    fixture site, and an admin key of a tenant made with the CLI."""

    def __init__(self, binary, site_port, tmp, sessions_toml, browser_toml="", workers=None):
        self.binary, self.tmp = str(binary), pathlib.Path(tmp)
        data = self.tmp / "data"
        run = lambda *a: subprocess.run([self.binary, *a, "--data-dir", str(data)], check=True,
                                        capture_output=True, text=True, env=self.env()).stdout.strip()
        run("tenant", "create", "bench")
        self.key = run("key", "create", "--tenant", "bench", "--role", "admin")
        config = self.tmp / "airlock.toml"
        config.write_text(f'[policy]\nallow_private = ["127.0.0.1:{site_port}"]\n'
                          f'[sessions]\n{sessions_toml}\n[browser]\n{browser_toml}\n'
                          + (workers.toml() if workers else ""))
        self.workers = workers
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = self.env()
        env["AIRLOCK_CONFIG"] = str(config)
        self.process = subprocess.Popen(
            [self.binary, "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", str(data)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(400):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("airlock serve did not listen")

    def env(self):
        env = dict(os.environ)
        env.pop("AIRLOCK_CONFIG", None)
        env.pop("AIRLOCK_API_KEY", None)
        env["TMPDIR"] = str(self.tmp)
        if getattr(self, "workers", None):
            env = self.workers.env(env)
        return env

    def lease(self, user, conversation):
        body = json.dumps({"user_id": user, "conversation_id": conversation}).encode()
        request = urllib.request.Request(
            f"{self.url}/api/v1/sessions", data=body, method="POST",
            headers={"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _percentile(values, q):
    values = sorted(values)
    if not values:
        return None
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


async def _drive(mcp_url, key, base, actions, latencies, errors):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    steps = [
        ("browser_navigate", {"url": f"{base}/login.html", "snapshot": "none"}),
        ("browser_type", {"role": "textbox", "name": "Username", "text": "bob"}),
        ("browser_click", {"role": "button", "name": "Sign in"}),
        ("browser_snapshot", {}),
    ]
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60.0, read=120.0)) as http:
        async with Client(streamable_http_client(mcp_url, http_client=http), mode="legacy") as client:
            for i in range(actions):
                tool, args = steps[i % len(steps)]
                started = time.perf_counter()
                result = await client.call_tool(tool, args)
                latencies.append((time.perf_counter() - started) * 1000)
                if result.is_error:
                    errors.append(f"{tool}: " + " ".join(getattr(c, "text", "") for c in result.content)[:200])


async def leased_load(binary, site_port, sessions=20, actions=20, workers=None, prefix="load20x20"):
    """`sessions` leased sessions at once, `actions` actions each (on `workers`, the
    `fleet.Workers` listed in the config, when given)."""
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        gateway = Gateway(binary, site_port, tmp, f"max_per_user = 0\naction_budget = {actions + 10}",
                          workers=workers)
        try:
            base = f"http://127.0.0.1:{site_port}"
            started = time.perf_counter()
            leases = await asyncio.gather(*[
                asyncio.to_thread(gateway.lease, f"user-{i}", "conversation") for i in range(sessions)])
            leased_s = time.perf_counter() - started
            latencies, errors = [], []
            started = time.perf_counter()
            await asyncio.gather(*[
                _drive(l["mcp_url"], gateway.key, base, actions, latencies, errors) for l in leases])
            wall = time.perf_counter() - started
        finally:
            gateway.stop()
    if errors:
        raise RuntimeError(f"{len(errors)} of {len(latencies)} actions failed, first: {errors[0]}")
    return {
        f"{prefix}_actions": len(latencies),
        f"{prefix}_errors": len(errors),
        f"{prefix}_action_p50_ms": statistics.median(latencies),
        f"{prefix}_action_p95_ms": _percentile(latencies, 0.95),
        f"{prefix}_wall_s": wall,
        f"{prefix}_lease_all_s": leased_s,
    }


async def leased_load_on_workers(binary, site_port, chrome, sessions=40, actions=20):
    """`leased_load` with its sessions spread over two workers on "other machines"
    (TLS on loopback)."""
    import fleet

    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp:
        workers = fleet.Workers(binary, tmp, 2, chrome)
        try:
            return await leased_load(binary, site_port, sessions, actions, workers=workers,
                                     prefix=f"load{sessions}x{actions}_two_workers")
        finally:
            workers.stop()


def idle_capacity(binary, site_port, descendants, pss_mib, budget_mib=4096, most=400, step=10):
    """How many idle leased sessions (each on a small page) fit in `budget_mib` of PSS
    (the gateway and every process under it)."""
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        # The shared Chromium's own memory bound (a cgroup, 4 GiB by default) counts
        # differently from PSS; lifted here so the PSS budget is what is measured.
        gateway = Gateway(binary, site_port, tmp,
                          f"max_per_user = 0\nmax_total = {most + step}\nmin_free_memory_mb = 0\nidle_ttl_secs = 3600\nwarm = 0",
                          f"memory_limit_mb = {budget_mib * 2}")
        try:
            base = f"http://127.0.0.1:{site_port}"
            fitted, pss, last = 0, 0.0, 0.0
            while fitted < most:
                batch = [gateway.lease(f"user-{fitted + i}", "c") for i in range(step)]
                asyncio_run_navigate(batch, gateway.key, base)
                pss = pss_mib(descendants(gateway.process.pid))
                if pss > budget_mib:
                    break
                fitted += step
                last = pss
        finally:
            gateway.stop()
    return {
        "idle_leased_sessions_in_4gib": fitted,
        "idle_leased_pss_mib": last,
        "pss_per_idle_leased_session_mib": last / fitted if fitted else None,
    }


def asyncio_run_navigate(leases, key, base):
    """Puts each leased session on the login page (one action), then leaves it idle."""
    async def go():
        latencies, errors = [], []
        await asyncio.gather(*[_drive(l["mcp_url"], key, base, 1, latencies, errors) for l in leases])
        if errors:
            raise RuntimeError(errors[0])
    asyncio.run(go())
