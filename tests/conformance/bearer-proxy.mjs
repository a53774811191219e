// A loopback proxy in front of `plughost serve --http` that adds the bearer
// token to every request: the conformance suite cannot send a header of its
// own, and plughost's HTTP transport requires one. The server is not
// weakened: the token stays required, and only this test proxy holds it.
//
// The proxy's own host and origin are rewritten to the server's, so that a
// request for the proxy is one for the server; any other Host or Origin (the
// DNS rebinding scenario sends evil.example.com) goes through unchanged, for
// plughost to refuse.
//
//   node bearer-proxy.mjs LISTEN_PORT UPSTREAM_PORT TOKEN_FILE
import http from "node:http";
import { readFileSync } from "node:fs";

const [listen, upstream, tokenFile] = process.argv.slice(2);
const token = readFileSync(tokenFile, "utf8").trim();
const own = new Set([`127.0.0.1:${listen}`, `localhost:${listen}`]);
const agent = new http.Agent({ keepAlive: true });

http
  .createServer((req, res) => {
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    if (!headers.host || own.has(headers.host)) headers.host = `127.0.0.1:${upstream}`;
    if (headers.origin && own.has(headers.origin.replace(/^https?:\/\//, ""))) {
      headers.origin = `http://127.0.0.1:${upstream}`;
    }
    const forwarded = http.request(
      { host: "127.0.0.1", port: upstream, method: req.method, path: req.url, headers, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        res.flushHeaders();
        answer.pipe(res);
      },
    );
    forwarded.on("error", (e) => {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`proxy error: ${e.message}`);
    });
    res.on("close", () => forwarded.destroy());
    req.pipe(forwarded);
  })
  .listen(Number(listen), "127.0.0.1");
