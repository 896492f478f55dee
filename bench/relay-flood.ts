// The ProxyGuard relay under a flood of slow clients, as a figure next to its target rather than
// a timed test (a timed bound fails on a busy machine): 2,000 connections send an upgrade
// request a byte at a time, reconnecting when cut off, while 100 real clients open tunnels, ten
// at a time. Target: every real upgrade succeeds, and their p99 stays under half the request
// timeout, far below what a real client would take if it waited for a slow one's slot to time
// out (the whole request timeout). Run by bench/run.sh (BENCH_ONLY=relay runs it alone).
import { createSocket } from 'node:dgram';
import { loadavg } from 'node:os';
import { pino } from 'pino';
import { DEFAULT_REQUEST_TIMEOUT_MS, ProxyGuardRelay } from '../src/agent/proxyguard/relay.js';
import { percentile99, startSlowClients, timedInParallel } from '../test/support/slow-clients.js';
import { openUotlvTunnel } from '../test/support/uotlv-client.js';

const HOST_NAME = 'vpn1.example.org';
const SLOW_CLIENTS = 2_000;
const REAL_CLIENTS = 100;
const UPGRADE_TIMEOUT_MS = 5_000;

/** Rejects after `ms`: an upgrade that never ends counts as failed. */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main(): Promise<void> {
  const loadBefore = loadavg();
  // WireGuard's place: a UDP echo.
  const udp = createSocket('udp4');
  udp.on('message', (datagram, from) => udp.send(datagram, from.port, from.address));
  await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
  const relay = await ProxyGuardRelay.start({
    listen: { host: '127.0.0.1', port: 0 },
    target: () => ({ host: '127.0.0.1', port: udp.address().port }),
    hostNames: [HOST_NAME],
    maxTunnels: 500,
    idleTimeoutMs: 60_000,
    logger: pino({ level: 'silent' }),
  });
  const slow = startSlowClients({
    host: '127.0.0.1',
    port: relay.address.port,
    count: SLOW_CLIENTS,
    opening: () => `GET /proxyguard/${HOST_NAME} HTTP/1.1\r\nHost: relay\r\nConnection: Upgrade\r\nX-Slow: `,
    dripIntervalMs: 1_000,
    reconnectDelayMs: 1_000,
  });
  await slow.started;
  const endpoint = `http://127.0.0.1:${relay.address.port}/proxyguard/${HOST_NAME}`;
  const upgrades = await timedInParallel(
    Array.from({ length: REAL_CLIENTS }, () => async () => {
      try {
        const tunnel = await within(openUotlvTunnel(endpoint), UPGRADE_TIMEOUT_MS);
        tunnel.socket.destroy();
        return true;
      } catch {
        return false;
      }
    }),
    10,
    // Spread over about 3 s, so real clients also arrive while evicted slow ones reconnect.
    300,
  );
  const held = relay.handshakeCount;
  slow.stop();
  await relay.close();
  udp.close();
  const failed = upgrades.filter(({ result }) => !result).length;
  const p99 = percentile99(upgrades.map(({ ms }) => ms));
  console.log(`relay flood: ${SLOW_CLIENTS} slow clients, ${REAL_CLIENTS} real upgrades`);
  console.log(`  failed upgrades        ${failed} (target 0)`);
  console.log(`  p99 of the upgrades    ${Math.round(p99)} ms (target ≤ ${DEFAULT_REQUEST_TIMEOUT_MS / 2} ms)`);
  console.log(`  handshake slots held   ${held} (at most 64)`);
  console.log(
    `  load average before: ${loadBefore.map((value) => value.toFixed(2)).join(' ')}, after: ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  );
}

await main();
