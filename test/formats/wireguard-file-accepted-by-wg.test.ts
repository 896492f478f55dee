// End-to-end proof that the rendered client file is real WireGuard configuration:
// a userspace interface (wireguard-go) is configured from it with the real `wg`
// tool, and `wg` then reports exactly the peer we rendered. Needs root.

import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';

import { renderWireGuardClientConfig } from '../../src/wireguard/client-config.js';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';

const WG = '/usr/bin/wg';
const WIREGUARD_GO = '/usr/bin/wireguard-go';

function run(command: string, args: string[]): string {
  const result = spawnSync(command, args, { encoding: 'utf8' });
  assert.equal(result.status, 0, `${command} ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

function interfaceExists(name: string): boolean {
  return spawnSync('ip', ['link', 'show', name], { stdio: 'ignore' }).status === 0;
}

async function waitForSocket(path: string, child: ChildProcess, output: () => string): Promise<void> {
  for (let waited = 0; waited < 10_000; waited += 50) {
    if (existsSync(path)) return;
    if (child.exitCode !== null) assert.fail(`wireguard-go exited early (${child.exitCode}): ${output()}`);
    await sleep(50);
  }
  assert.fail(`wireguard-go did not create ${path} within 10 s: ${output()}`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timedOut = await Promise.race([exited.then(() => false), sleep(3_000).then(() => true)]);
  if (timedOut) {
    child.kill('SIGKILL');
    await exited;
  }
}

/** wg-quick understands Address, DNS and MTU; the bare `wg setconf` does not. */
function withoutWgQuickKeys(text: string): string {
  return text
    .split('\n')
    .filter((line) => !/^(Address|DNS|MTU)\s*=/.test(line))
    .join('\n');
}

test('a rendered client file configures a real WireGuard interface', async (t) => {
  assert.ok(existsSync(WG), `${WG} is required for this test`);
  assert.ok(existsSync(WIREGUARD_GO), `${WIREGUARD_GO} is required for this test`);

  // Unique per run and within the 15-character limit of Linux interface names.
  const interfaceName = `wgt${randomBytes(3).toString('hex')}`;
  const workDir = mkdtempSync(join(tmpdir(), 'wg-accept-'));
  let output = '';
  const daemon = spawn(WIREGUARD_GO, ['-f', interfaceName], { stdio: ['ignore', 'pipe', 'pipe'] });
  daemon.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  daemon.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));

  t.after(async () => {
    await stop(daemon);
    if (interfaceExists(interfaceName)) spawnSync('ip', ['link', 'del', interfaceName], { stdio: 'ignore' });
    rmSync(workDir, { recursive: true, force: true });
  });

  await waitForSocket(`/var/run/wireguard/${interfaceName}.sock`, daemon, () => output);

  const client = generateWireGuardKeyPair();
  const server = generateWireGuardKeyPair();
  // Every optional line is switched on, and the host is an IPv6 literal so the
  // bracketed endpoint form is exercised (a name would need DNS resolution).
  const text = renderWireGuardClientConfig(
    {
      hostName: '::1',
      listenPort: 51820,
      mtu: 1392,
      serverPublicKey: server.publicKey,
      rangeFour: '10.42.42.0/24',
      rangeSix: 'fd42::/64',
      defaultGateway: false,
      dnsServerList: ['@GW4@', '@GW6@'],
      dnsSearchDomainList: ['example.org'],
      routeList: ['192.168.1.0/24', 'fd11::/64'],
      excludeRouteList: ['192.168.1.5/32'],
      keepAlive: true,
      proxyEndpoint: null,
    },
    { privateKey: client.privateKey, ipFour: '10.42.42.2', ipSix: 'fd42::2' },
  );
  const file = join(workDir, `${interfaceName}.conf`);
  writeFileSync(file, withoutWgQuickKeys(text), { mode: 0o600 });

  run(WG, ['setconf', interfaceName, file]);

  // `wg show <if> dump`: one tab-separated line for the interface, then one per peer.
  const [interfaceLine, ...peerLines] = run(WG, ['show', interfaceName, 'dump']).trim().split('\n');
  assert.equal(interfaceLine?.split('\t')[0], client.privateKey, 'the interface uses the rendered private key');
  assert.equal(interfaceLine?.split('\t')[1], client.publicKey);
  assert.equal(peerLines.length, 1, 'exactly one peer');

  const [publicKey, presharedKey, endpoint, allowedIps, , , , keepAlive] = (peerLines[0] ?? '').split('\t');
  assert.equal(publicKey, server.publicKey);
  assert.equal(presharedKey, '(none)');
  assert.equal(endpoint, '[::1]:51820');
  assert.equal(keepAlive, '25');

  // wg reports allowed IPs in its own order, so compare as sets.
  const expected = /^AllowedIPs = (.*)$/m.exec(text)?.[1]?.split(',') ?? [];
  assert.equal(expected.length, 11, 'the split-tunnel example yields 11 prefixes');
  assert.deepEqual(new Set(allowedIps?.split(',')), new Set(expected));
});
