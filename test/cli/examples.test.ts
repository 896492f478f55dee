// The files in examples/ are what the docs tell administrators to start from, so they are
// run here and cannot rot: the portal configuration serves all four formats on one machine,
// the node configuration is valid and points at that portal, and the nginx example and the
// systemd units name the same addresses and paths.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { parseNodeAgentConfig } from '../../src/agent/config.js';
import { resolvePortalConfig } from '../../src/config/load.js';
import type { PortalConfigFile } from '../../src/config/schema.js';
import { CONFIGURATION_MEDIA_TYPES } from '../../src/protocol/admin-api.js';
import { startTestPortal } from '../support/test-portal.js';

const examples = (name: string): string => new URL(`../../examples/${name}`, import.meta.url).pathname;
const readJson = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(examples(name), 'utf8')) as Record<string, unknown>;

test('examples/portal.json serves WireGuard, WireGuard over TCP, the Apple profile and OpenVPN from one profile', async (t) => {
  const document = readJson('portal.json') as PortalConfigFile;
  // As it is, it is a valid configuration.
  const resolved = resolvePortalConfig(document, 'examples/portal.json');
  assert.equal(resolved.dataDir, '/var/lib/vpn-portal');
  // Run it, with only the folder and ports a test may use changed.
  const portal = await startTestPortal({
    config: { ...document, listen: { host: '127.0.0.1', port: 0 }, metrics: { listen: '127.0.0.1:0' } },
  });
  t.after(portal.close);
  const [profile] = document.ProfileList;
  assert.ok(profile !== undefined);
  for (const [format, mediaType] of Object.entries(CONFIGURATION_MEDIA_TYPES)) {
    const created = await portal.admin.create({ user_id: `user-${format}`, profile_id: profile.profileId }, mediaType);
    assert.equal(created.contentType.split(';')[0], mediaType, format);
  }
});

test('examples/node.json is a valid node configuration for the portal of examples/portal.json', () => {
  const portal = resolvePortalConfig(readJson('portal.json'), 'examples/portal.json');
  const node = parseNodeAgentConfig(readJson('node.json'), '/etc/vpn-portal-node/node.json');
  assert.equal(node.apiUrl.href, `http://${portal.listen.host}:${portal.listen.port}${portal.basePath}/node-api.php`);
  const [profile] = portal.profiles;
  const served = profile?.nodes.find((entry) => entry.nodeNumber === node.nodeNumber);
  assert.equal(served?.nodeUrl, `http://${node.listen.host}:${node.listen.port}`);
  assert.deepEqual(node.nat, { mode: 'masquerade' }, 'the example is a full tunnel: defaultGateway needs nat');
  assert.deepEqual(node.metrics, { host: '127.0.0.1', port: 9467 });
  assert.notDeepEqual(node.metrics, portal.metrics, 'portal and node metrics fit on one host');
});

test('the nginx example and the systemd units name the addresses and paths of the example configurations', () => {
  const portal = resolvePortalConfig(readJson('portal.json'), 'examples/portal.json');
  const nginx = readFileSync(examples('nginx/vpn-portal.conf'), 'utf8');
  assert.ok(nginx.includes(`location ${portal.basePath}/ {`));
  assert.ok(nginx.includes(`proxy_pass http://${portal.listen.host}:${portal.listen.port};`));
  assert.ok(portal.adminApi.trustedProxyList.includes('127.0.0.1/32'), 'the proxy on the same host is trusted');
  const portalUnit = readFileSync(examples('systemd/vpn-portal.service'), 'utf8');
  assert.match(
    portalUnit,
    /^ExecStart=\/opt\/vpn-portal\/dist\/cli\/main\.js serve --config \/etc\/vpn-portal\/portal\.json$/m,
  );
  assert.match(portalUnit, new RegExp(`^ReadWritePaths=${portal.dataDir}$`, 'm'));
  assert.match(portalUnit, /^User=vpn-portal$/m);
  const nodeUnit = readFileSync(examples('systemd/vpn-portal-node.service'), 'utf8');
  assert.match(
    nodeUnit,
    /^ExecStart=\/opt\/vpn-portal\/dist\/cli\/main\.js node --config \/etc\/vpn-portal-node\/node\.json$/m,
  );
  // systemd ends the agent's openvpn and wireguard-go with it only when it kills the whole group.
  assert.match(nodeUnit, /^KillMode=control-group$/m);
  const node = parseNodeAgentConfig(readJson('node.json'), '/etc/vpn-portal-node/node.json');
  assert.equal(path.dirname(node.nodeKeyFile), '/etc/vpn-portal-node');
});

test("the README's first configuration is a valid portal configuration, and its node.json belongs to it", () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.split(/^## /m).find((part) => part.startsWith('A first configuration\n'));
  assert.ok(section !== undefined, 'README.md has a "A first configuration" section');
  const [portalText, nodeText] = [...section.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? '');
  const portal = resolvePortalConfig(JSON.parse(portalText ?? ''), '/etc/vpn-portal/portal.json');
  const node = parseNodeAgentConfig(JSON.parse(nodeText ?? ''), '/etc/vpn-portal-node/node.json');
  assert.equal(node.apiUrl.href, `${portal.baseUrl.href}node-api.php`);
  assert.equal(node.nodeKeyFile, '/etc/vpn-portal-node/node.key');
  const served = portal.profiles[0]?.nodes.find((entry) => entry.nodeNumber === node.nodeNumber);
  assert.equal(served?.nodeUrl, `http://${node.listen.host}:${node.listen.port}`);
});
