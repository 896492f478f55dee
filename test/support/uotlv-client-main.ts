// Runs the test ProxyGuard client (uotlv-client.ts) as its own process, so it can live in a
// network namespace next to a WireGuard client:
//   node --import tsx uotlv-client-main.ts LISTEN_HOST:PORT PROXY_ENDPOINT [CONNECT_HOST:PORT]
// An https PROXY_ENDPOINT trusts the PEM file named by UOTLV_CA_FILE.
// Prints "ready" once its UDP port is bound and the tunnel is upgraded; stops on SIGTERM.
import { readFileSync } from 'node:fs';
import { startUotlvClientRelay, type TcpAddress } from './uotlv-client.js';

function address(text: string | undefined, what: string): TcpAddress {
  const match = /^(.+):(\d+)$/.exec(text ?? '');
  if (match === null) throw new Error(`${what}: expected HOST:PORT, got ${String(text)}`);
  return { host: match[1] ?? '', port: Number(match[2]) };
}

const [listen, proxyEndpoint, connectTo] = process.argv.slice(2);
if (proxyEndpoint === undefined)
  throw new Error('usage: uotlv-client-main.ts LISTEN_HOST:PORT PROXY_ENDPOINT [CONNECT_HOST:PORT]');
const relay = await startUotlvClientRelay({
  listen: address(listen, 'listen'),
  proxyEndpoint,
  ...(process.env['UOTLV_CA_FILE'] === undefined ? {} : { ca: readFileSync(process.env['UOTLV_CA_FILE'], 'utf8') }),
  ...(connectTo === undefined ? {} : { connectTo: address(connectTo, 'connect') }),
  log: (message) => process.stderr.write(`${message}\n`),
});
process.stdout.write('ready\n');
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    void relay.close().finally(() => process.exit(0));
  });
}
