// Someone who is no WireGuard peer filling a ProxyGuard relay, as its own process so it can run
// in a test's network namespace: opens COUNT tunnels one after another, each sending a frame
// WireGuard cannot authenticate (a handshake initiation of random bytes) every 200 ms.
//   node --import tsx uotlv-junk-main.ts PROXY_ENDPOINT COUNT
// Prints `{"opened":N,"refused":M}` once all were tried; keeps the open ones until SIGTERM.
import { randomBytes } from 'node:crypto';
import { openUotlvTunnel, uotlvFrame, UpgradeRefused } from './uotlv-client.js';

const [proxyEndpoint, countText] = process.argv.slice(2);
if (proxyEndpoint === undefined || countText === undefined)
  throw new Error('usage: uotlv-junk-main.ts PROXY_ENDPOINT COUNT');

/** A handshake initiation's type and size (148 bytes), but random keys and MACs: WireGuard drops it unanswered. */
const junkInitiation = (): Buffer => Buffer.concat([Buffer.from([1, 0, 0, 0]), randomBytes(144)]);

let opened = 0;
let refused = 0;
for (let index = 0; index < Number(countText); index++) {
  try {
    const tunnel = await openUotlvTunnel(proxyEndpoint);
    opened += 1;
    const timer = setInterval(() => tunnel.socket.write(uotlvFrame(junkInitiation())), 200);
    tunnel.socket.write(uotlvFrame(junkInitiation()));
    void tunnel.closed.then(() => clearInterval(timer));
  } catch (error) {
    if (!(error instanceof UpgradeRefused)) throw error;
    refused += 1;
  }
}
process.stdout.write(`${JSON.stringify({ opened, refused })}\n`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => process.exit(0));
