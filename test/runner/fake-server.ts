import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake server saw. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

/** A route's answer: status and JSON body (undefined: no body). */
export interface FakeAnswer {
  status: number;
  body?: unknown;
}

/** Handles `METHOD /path` (query string stripped); return undefined for a 404. */
export type FakeHandler = (request: SeenRequest) => FakeAnswer | undefined | Promise<FakeAnswer | undefined>;

/** A small HTTP server on 127.0.0.1 (a free port) that records every request and answers from `handler`. */
export interface FakeServer {
  url: string;
  seen: SeenRequest[];
  close(): Promise<void>;
}

/** Starts a {@link FakeServer}; close it in afterEach. */
export async function startFakeServer(handler: FakeHandler): Promise<FakeServer> {
  const seen: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      let body: unknown;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      const request: SeenRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body };
      seen.push(request);
      Promise.resolve(handler(request)).then(
        (answer) => {
          const a = answer ?? { status: 404, body: { error: `no route ${request.method} ${request.url}` } };
          if (a.body === undefined) {
            res.writeHead(a.status);
            res.end();
          } else {
            res.writeHead(a.status, { 'content-type': 'application/json' });
            res.end(JSON.stringify(a.body));
          }
        },
        (error: unknown) => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: String(error) }));
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The route of a request without its query string and the `/api/v1` prefix. */
export function routeOf(request: SeenRequest): string {
  return `${request.method} ${request.url.replace(/\?.*$/, '').replace(/^\/api\/v1/, '')}`;
}
