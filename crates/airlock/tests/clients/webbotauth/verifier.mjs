// A site that verifies Web Bot Auth the way Cloudflare's packages do, with none of
// Airlock's code: it serves HTTP on 127.0.0.1 (its port is the first line it prints),
// and for each request it receives prints one JSON line: what arrived and what
// verifying it found. Keys are found as a verifier finds them: the Signature-Agent
// member names a key directory, fetched once, whose own response signatures are
// verified too (http-message-sig, with the `req` authority and Content-Digest); each
// key's id must be its JWK thumbprint (web-bot-auth's jwkToKeyID). Requests are
// verified by http-message-sig's strict verifier: the dictionary member the signature
// covers, @authority, created/expires/keyid/tag, Ed25519 through WebCrypto.
import http from "node:http";
import { createHash } from "node:crypto";
import { component, verifySignature, webcrypto } from "http-message-sig";
import { helpers, jwkToKeyID } from "web-bot-auth";

const directories = new Map();

function memberUrl(agent, label) {
  // `label="url"` (a dictionary member), optionally `;type=jwks_uri`.
  for (const part of agent.split(",")) {
    const m = part.trim().match(/^([a-z*][a-z0-9_.*-]*)="([^"]*)"(;type=([a-z_]+))?$/);
    if (m && m[1] === label) return { url: m[2], type: m[4] ?? "directory" };
  }
  return null;
}

async function publicKey(jwk) {
  return crypto.subtle.importKey("jwk", { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, { name: "Ed25519" }, true, ["verify"]);
}

// The keys of a directory, by kid, after its response's proofs verified.
async function directory(member) {
  const url = member.type === "jwks_uri" ? member.url : `${member.url}/.well-known/http-message-signatures-directory`;
  if (directories.has(url)) return directories.get(url);
  const response = await fetch(url, { redirect: "manual" });
  if (response.status !== 200) throw new Error(`directory ${url}: ${response.status}`);
  const body = Buffer.from(await response.arrayBuffer());
  const digest = `sha-256=:${createHash("sha256").update(body).digest("base64")}:`;
  if (response.headers.get("content-digest") !== digest) throw new Error("directory digest mismatch");
  const jwks = JSON.parse(body.toString("utf8"));
  const keys = new Map();
  for (const jwk of jwks.keys) {
    if (jwk.kid !== (await jwkToKeyID(jwk, helpers.WEBCRYPTO_SHA256, helpers.BASE64URL_DECODE))) throw new Error(`kid ${jwk.kid} is not the key's thumbprint`);
    keys.set(jwk.kid, jwk);
  }
  // Each key's proof of possession over the authority it was fetched at.
  const fields = [...response.headers.entries()].map(([name, value]) => ({ name, value }));
  const labels = [...(response.headers.get("signature-input") ?? "").matchAll(/([a-z][a-z0-9_-]*)=\(/g)].map((m) => m[1]);
  const proven = new Set();
  for (const label of labels) {
    const verified = await verifySignature(
      { status: 200, fields, request: { kind: "request", method: "GET", targetUri: url, fields: [] } },
      {
        label,
        policy: {
          algorithms: ["ed25519"],
          requiredComponents: [component("@authority", { req: true }), "content-digest"],
          requiredParameters: ["created", "expires", "keyid", "tag"],
          validate: (v) => v.parameters.tag === "http-message-signatures-directory",
        },
        async resolveVerifier(candidate) {
          const jwk = keys.get(candidate.parameters.keyid);
          if (!jwk) throw new Error("unknown key");
          return webcrypto.verifier(await publicKey(jwk));
        },
      },
    );
    proven.add(verified.parameters.keyid);
  }
  for (const kid of keys.keys()) if (!proven.has(kid)) throw new Error(`key ${kid} has no proof`);
  const entry = { url, keys };
  directories.set(url, entry);
  return entry;
}

async function verifyRequest(req) {
  const agent = req.headers["signature-agent"];
  const input = req.headers["signature-input"] ?? "";
  const label = (input.match(/^([a-z][a-z0-9_-]*)=/) ?? [])[1];
  if (!agent || !label) throw new Error("no Signature-Agent or label");
  const member = memberUrl(agent, label);
  if (!member) throw new Error("no Signature-Agent member for the label");
  const dir = await directory(member);
  const headers = new Headers();
  for (const name of ["signature", "signature-input", "signature-agent"]) {
    if (req.headers[name] !== undefined) headers.set(name, req.headers[name]);
  }
  const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method === "GET" || req.method === "HEAD" ? req.method : "POST", headers });
  const verified = await verifySignature(request, {
    label,
    policy: {
      algorithms: ["ed25519"],
      requiredComponents: ["@authority", component("signature-agent", { key: label })],
      requiredParameters: ["created", "expires", "keyid", "tag", "nonce"],
      maxAge: 300,
      validate: (v) => v.parameters.tag === "web-bot-auth" && v.parameters.expires - v.parameters.created <= 86400,
    },
    async resolveVerifier(candidate) {
      const jwk = dir.keys.get(candidate.parameters.keyid);
      if (!jwk) throw new Error("unknown key");
      return webcrypto.verifier(await publicKey(jwk));
    },
  });
  return { kid: verified.parameters.keyid, directory: dir.url };
}

const server = http.createServer(async (req, res) => {
  const signed = ["signature", "signature-input", "signature-agent"].some((h) => req.headers[h] !== undefined);
  const line = { line: `${req.method} ${req.url}`, host: req.headers.host, signed, kid: null, directory: null, error: null };
  if (signed) {
    try {
      Object.assign(line, await verifyRequest(req));
    } catch (e) {
      line.error = `${e?.code ?? ""} ${e?.message ?? e}`.trim();
    }
  }
  process.stdout.write(`${JSON.stringify(line)}\n`);
  if (req.url.startsWith("/page")) {
    res.writeHead(200, { "content-type": "text/html" });
    res.end('<!doctype html><title>node</title><img src="/pixel.png" alt="pixel"><p id="s">working</p><script>fetch("/api/node").finally(() => { document.getElementById("s").textContent = "done"; });</script>');
  } else {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("ok");
  }
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
