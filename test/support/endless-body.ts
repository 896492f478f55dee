// A local HTTP server whose every answer is a body far larger than any limit, made on the fly in
// chunks (Transfer-Encoding: chunked, no Content-Length) and written only as fast as the client
// reads: so the bytes it wrote before the client closed the connection tell how much the client
// read, which a test can compare with the client's limit.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

const CHUNK = Buffer.alloc(64 * 1024, 0x20);

export interface EndlessBody {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  /** Bytes of body written to the connections that have closed so far. */
  readonly sentBytes: () => number;
  /** Resolves once `count` connections have closed, with the body bytes written to them. */
  closed(count?: number): Promise<number>;
  close(): Promise<void>;
}

/** Serves `totalBytes` of `contentType` (spaces: valid JSON whitespace, never a complete document) to every request. */
export async function startEndlessBody(totalBytes: number, contentType = 'application/json'): Promise<EndlessBody> {
  let sent = 0;
  let closedCount = 0;
  const waiters: { count: number; resolve: (bytes: number) => void }[] = [];
  const server: Server = createServer((request, response) => {
    request.resume();
    response.writeHead(200, { 'content-type': contentType });
    let written = 0;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      sent += written;
      closedCount += 1;
      for (const waiter of waiters.filter((candidate) => candidate.count <= closedCount)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(sent);
      }
    };
    response.once('close', finish);
    const pump = (): void => {
      while (!done && written < totalBytes) {
        written += CHUNK.length;
        if (!response.write(CHUNK)) {
          response.once('drain', pump);
          return;
        }
      }
      if (!done) response.end();
    };
    pump();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sentBytes: () => sent,
    closed: (count = 1) =>
      closedCount >= count ? Promise.resolve(sent) : new Promise((resolve) => waiters.push({ count, resolve })),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
