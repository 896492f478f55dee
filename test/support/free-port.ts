// A TCP port that is free right now on `host`, for two real programs that must know each
// other's address before either listens (a node agent and its portal). Drawn from below the
// kernel's ephemeral range: a port the kernel hands out (listen on port 0, and every outgoing
// connection of the tests running side by side) could be taken again between this check and
// the real listen, which happened under load. Never a port fetch refuses: a test that drew 10080
// for its proxy once saw only "bad port".
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { randomInt } from 'node:crypto';

/** The first port the kernel hands out by itself (Linux's ip_local_port_range; 32768 where it cannot be read). */
function firstEphemeralPort(): number {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 11_000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

const LOWEST_PORT = 10_000;
/** The one port above LOWEST_PORT that fetch refuses to connect to (the Fetch standard's "bad ports"). */
const FETCH_BLOCKED_PORT = 10_080;

export async function freePort(host = '127.0.0.1'): Promise<number> {
  const below = firstEphemeralPort();
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = randomInt(LOWEST_PORT, below);
    if (port === FETCH_BLOCKED_PORT) continue;
    if (await isFree(host, port)) return port;
  }
  throw new Error(`no free port between ${LOWEST_PORT} and ${below} on ${host} after 100 tries`);
}

async function isFree(host: string, port: number): Promise<boolean> {
  const server = createServer();
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, host, () => resolve(true));
  });
  if (listening) await new Promise<void>((resolve) => server.close(() => resolve()));
  return listening;
}
