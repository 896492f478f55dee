// A TCP port that is free right now on `host`, for two real programs that must know each
// other's address before either listens (a node agent and its portal).
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

export async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
