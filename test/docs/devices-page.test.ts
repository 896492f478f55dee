// docs/devices.md tells an MDM administrator how a device makes its WireGuard key and fills in
// the file the portal answers for it; the commands it shows are run here, as written, so the
// page cannot drift from the placeholder the portal writes.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import {
  DEVICE_PRIVATE_KEY_PLACEHOLDER,
  renderWireGuardClientConfig,
  type WireGuardClientProfile,
} from '../../src/wireguard/client-config.js';
import type { WireGuardKey } from '../../src/shared/ids.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

const page = readFileSync(new URL('../../docs/devices.md', import.meta.url), 'utf8');

/** The first line of the page's shell blocks that holds `fragment`. */
function shellLine(fragment: string): string {
  const blocks = [...page.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '');
  const line = blocks.flatMap((block) => block.split('\n')).find((candidate) => candidate.includes(fragment));
  assert.ok(line !== undefined, `docs/devices.md shows a command with "${fragment}"`);
  return line;
}

const PROFILE: WireGuardClientProfile = {
  hostName: 'vpn.example.org',
  listenPort: 51820,
  mtu: null,
  serverPublicKey: 'HsM8hTAaK8mGnQ56MHmC7aQ3Sf4STJeG8EEIAa5OE3g=' as WireGuardKey,
  rangeFour: '10.44.0.0/24',
  rangeSix: 'fd44::/64',
  defaultGateway: true,
  dnsServerList: ['9.9.9.9'],
  dnsSearchDomainList: [],
  routeList: [],
  excludeRouteList: [],
  keepAlive: false,
  proxyEndpoint: null,
};

test("docs/devices.md names the placeholder of a device's own key as the portal writes it", () => {
  assert.ok(page.includes(`PrivateKey = ${DEVICE_PRIVATE_KEY_PLACEHOLDER}`), 'the PrivateKey line, exactly');
});

test("the key and sed commands of docs/devices.md make a key and put it in the portal's file", (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-devices-page-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const run = (line: string): string => execFileSync('sh', ['-euc', line], { cwd: directory, encoding: 'utf8' });

  const publicKey = run(shellLine('wg genkey')).trim();
  const privateKey = readFileSync(path.join(directory, 'device.key'), 'utf8').trim();
  assert.equal(statSync(path.join(directory, 'device.key')).mode & 0o777, 0o600, 'only its owner reads the key');
  assert.equal(execFileSync('wg', ['pubkey'], { input: privateKey, encoding: 'utf8' }).trim(), publicKey);

  const answered = renderWireGuardClientConfig(PROFILE, { privateKey: null, ipFour: '10.44.0.2', ipSix: 'fd44::2' });
  writeFileSync(path.join(directory, 'wg0.conf'), answered);
  run(shellLine('sed -i'));
  const filled = readFileSync(path.join(directory, 'wg0.conf'), 'utf8');
  assert.equal(parseWireGuardFile(filled).interface.get('PrivateKey'), privateKey);
  assert.equal(filled, answered.replace(DEVICE_PRIVATE_KEY_PLACEHOLDER, privateKey), 'nothing else changed');
});
