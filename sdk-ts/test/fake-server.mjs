// A stand-in for the edge on loopback for the unit tests: each test says how to answer, and
// reads back what arrived.

import http from "node:http";

/**
 * Starts a server whose answers come from `handle(request, body, index)`, which returns
 * `{ status, headers, body }` (body: an object sent as JSON, or a string) or a Promise of it.
 * `requests` lists what arrived: method, url, headers, body (a Buffer) and the arrival time.
 */
export async function fakeServer(handle) {
  const requests = [];
  const server = http.createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", async () => {
      const body = Buffer.concat(chunks);
      const seen = {
        method: request.method,
        url: request.url,
        headers: request.headers,
        body,
        at: Date.now(),
      };
      requests.push(seen);
      try {
        const answer = (await handle(seen, requests.length - 1)) ?? {};
        if (answer.destroy) {
          request.socket.destroy();
          return;
        }
        const text =
          typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body ?? {});
        response.writeHead(answer.status ?? 200, {
          "Content-Type": "application/json",
          "X-Request-Id": request.headers["x-request-id"] ?? "server-made",
          ...(answer.headers ?? {}),
        });
        response.end(text);
      } catch (error) {
        response.writeHead(599);
        response.end(String(error));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    baseUrl: `http://127.0.0.1:${port}/o/org1/api/v1`,
    requests,
    json: (index) => JSON.parse(requests[index].body.toString()),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(resolve);
      }),
  };
}

/** A port nothing listens on (a server that was started and closed). */
export async function closedPort() {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}
