// The Apple configuration profile of a WireGuard configuration: parsed back with the same
// plist library and checked field by field against the WireGuard app's format, its
// identifiers stable per configuration, and its embedded WireGuard text accepted by the real
// `wg` on a wireguard-go interface (in a network namespace of its own).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse, type PlistValue } from 'plist';
import { renderAppleMobileconfig } from '../../src/apple/mobileconfig.js';
import { nameBasedUuid } from '../../src/apple/name-based-uuid.js';
import { asProfileId } from '../../src/shared/ids.js';
import { renderWireGuardClientConfig } from '../../src/wireguard/client-config.js';
import { exampleAppleConfiguration, exampleAppleProfile } from '../support/apple-fixtures.js';
import { NetnsLab } from '../support/netns.js';

const UUID = /^[0-9A-F]{8}-[0-9A-F]{4}-5[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$/;
const server = { publicKey: exampleAppleProfile.wireGuard.serverPublicKey };
const profile = exampleAppleProfile;
const configurationFor = exampleAppleConfiguration;

type Dict = { readonly [key: string]: PlistValue };

function asDict(value: PlistValue | undefined, what: string): Dict {
  assert.ok(
    typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      !(value instanceof Date) &&
      !(value instanceof Uint8Array),
    `${what} is a dict`,
  );
  return value as Dict;
}

/** The top-level dict and its single VPN payload. */
function parseProfile(xml: string): { top: Dict; vpn: Dict } {
  const top = asDict(parse(xml), 'the property list');
  const content = top['PayloadContent'];
  assert.ok(Array.isArray(content), 'PayloadContent is an array');
  assert.equal(content.length, 1, 'one payload');
  return { top, vpn: asDict(content[0], 'the VPN payload') };
}

describe('the Apple configuration profile', () => {
  test('is a Configuration holding one com.apple.vpn.managed payload for the WireGuard app', () => {
    const configuration = configurationFor('Laptop');
    const xml = renderAppleMobileconfig(profile, configuration);
    assert.match(
      xml,
      /^<\?xml version="1\.0" encoding="UTF-8"\?>\n<!DOCTYPE plist PUBLIC "-\/\/Apple\/\/DTD PLIST 1\.0\/\/EN"/,
    );

    const { top, vpn } = parseProfile(xml);
    assert.deepEqual(Object.keys(top).sort(), [
      'PayloadContent',
      'PayloadDisplayName',
      'PayloadIdentifier',
      'PayloadType',
      'PayloadUUID',
      'PayloadVersion',
    ]);
    assert.equal(top['PayloadType'], 'Configuration');
    assert.equal(top['PayloadVersion'], 1);
    assert.equal(top['PayloadDisplayName'], 'Employees (Laptop)');
    assert.match(String(top['PayloadIdentifier']), /^org\.example\.vpn\.employees\.[0-9a-f]{12}$/);
    assert.match(String(top['PayloadUUID']), UUID);

    assert.deepEqual(Object.keys(vpn).sort(), [
      'PayloadDisplayName',
      'PayloadIdentifier',
      'PayloadType',
      'PayloadUUID',
      'PayloadVersion',
      'UserDefinedName',
      'VPN',
      'VPNSubType',
      'VPNType',
      'VendorConfig',
    ]);
    assert.equal(vpn['PayloadType'], 'com.apple.vpn.managed');
    assert.equal(vpn['PayloadVersion'], 1);
    assert.equal(vpn['PayloadDisplayName'], 'VPN');
    assert.equal(vpn['PayloadIdentifier'], `${String(top['PayloadIdentifier'])}.wireguard`);
    assert.match(String(vpn['PayloadUUID']), UUID);
    assert.notEqual(vpn['PayloadUUID'], top['PayloadUUID'], 'each payload has its own UUID');
    assert.equal(vpn['UserDefinedName'], 'Employees (Laptop)');
    assert.equal(vpn['VPNType'], 'VPN');
    assert.equal(vpn['VPNSubType'], 'com.wireguard.ios');
    assert.deepEqual(asDict(vpn['VPN'], 'VPN'), {
      RemoteAddress: 'vpn1.example.org:51820',
      AuthenticationMethod: 'Password',
    });

    const vendorConfig = asDict(vpn['VendorConfig'], 'VendorConfig');
    assert.deepEqual(Object.keys(vendorConfig), ['WgQuickConfig']);
    const udpFile = renderWireGuardClientConfig({ ...profile.wireGuard, proxyEndpoint: null }, configuration.wireGuard);
    assert.equal(vendorConfig['WgQuickConfig'], udpFile, 'the same WireGuard file as application/x-wireguard-profile');
    assert.match(udpFile, /^Endpoint = vpn1\.example\.org:51820$/m, 'over UDP, not through ProxyGuard');
    assert.doesNotMatch(udpFile, /ProxyEndpoint/);
  });

  test('identifiers are stable for one configuration and differ between configurations', () => {
    const laptop = configurationFor('Laptop');
    const phone = configurationFor('Laptop');
    const first = parseProfile(renderAppleMobileconfig(profile, laptop));
    const again = parseProfile(renderAppleMobileconfig(profile, laptop));
    const other = parseProfile(renderAppleMobileconfig(profile, phone));

    for (const key of ['PayloadUUID', 'PayloadIdentifier']) {
      assert.equal(again.top[key], first.top[key], `top-level ${key} is stable`);
      assert.equal(again.vpn[key], first.vpn[key], `VPN ${key} is stable`);
      assert.notEqual(other.top[key], first.top[key], `top-level ${key} differs for another configuration`);
      assert.notEqual(other.vpn[key], first.vpn[key], `VPN ${key} differs for another configuration`);
    }
  });

  test('a device keeps its identifiers across re-issues; two devices, or two profiles of one device, never share them', () => {
    const device = (deviceId: string) => configurationFor('Laptop', { identity: { kind: 'device', deviceId } });
    const first = parseProfile(renderAppleMobileconfig(profile, device('dev-1')));
    const reissued = parseProfile(renderAppleMobileconfig(profile, device('dev-1')));
    const otherDevice = parseProfile(renderAppleMobileconfig(profile, device('dev-2')));
    const otherProfile = parseProfile(
      renderAppleMobileconfig({ ...profile, profileId: asProfileId('guests') }, device('dev-1')),
    );
    for (const key of ['PayloadUUID', 'PayloadIdentifier']) {
      for (const part of ['top', 'vpn'] as const) {
        assert.equal(reissued[part][key], first[part][key], `${part} ${key} is kept for a new key of the same device`);
        assert.notEqual(otherDevice[part][key], first[part][key], `${part} ${key} differs for another device`);
        assert.notEqual(
          otherProfile[part][key],
          first[part][key],
          `${part} ${key} differs for another profile of the device`,
        );
      }
    }
  });

  test('the macOS profile names the WireGuard app for macOS; the iOS one the app for iOS and iPadOS', () => {
    assert.equal(
      parseProfile(renderAppleMobileconfig(profile, configurationFor('Mac', { platform: 'macos' }))).vpn['VPNSubType'],
      'com.wireguard.macos',
    );
    assert.equal(
      parseProfile(renderAppleMobileconfig(profile, configurationFor('Phone', { platform: 'ios' }))).vpn['VPNSubType'],
      'com.wireguard.ios',
    );
  });

  test('on demand: trusted Wi-Fi names, then the probe, then connect everywhere else, in the VPN dictionary', () => {
    const onDemand = { trustedSsids: ['Office', 'Lab & <Guests>'], probeUrl: 'https://intranet.example.org/probe' };
    const vpn = asDict(
      parseProfile(renderAppleMobileconfig(profile, configurationFor('Laptop', { onDemand }))).vpn['VPN'],
      'VPN',
    );
    assert.equal(vpn['OnDemandEnabled'], 1);
    assert.deepEqual(vpn['OnDemandRules'], [
      { Action: 'Disconnect', InterfaceTypeMatch: 'WiFi', SSIDMatch: ['Office', 'Lab & <Guests>'] },
      { Action: 'Disconnect', URLStringProbe: 'https://intranet.example.org/probe' },
      { Action: 'Connect' },
    ]);

    const bare = asDict(
      parseProfile(
        renderAppleMobileconfig(
          profile,
          configurationFor('Laptop', { onDemand: { trustedSsids: [], probeUrl: null } }),
        ),
      ).vpn['VPN'],
      'VPN',
    );
    assert.deepEqual(bare['OnDemandRules'], [{ Action: 'Connect' }], 'without trusted networks: always connect');
    const none = asDict(parseProfile(renderAppleMobileconfig(profile, configurationFor('Laptop'))).vpn['VPN'], 'VPN');
    assert.deepEqual(
      Object.keys(none).sort(),
      ['AuthenticationMethod', 'RemoteAddress'],
      'no on-demand keys unless asked',
    );
  });

  test('an IP literal as portal host still gives a well-formed identifier', () => {
    for (const portalHost of ['192.0.2.10', '[2001:db8::10]']) {
      const { top } = parseProfile(renderAppleMobileconfig({ ...profile, portalHost }, configurationFor('Laptop')));
      assert.match(String(top['PayloadIdentifier']), /^[A-Za-z0-9-]+\.employees\.[0-9a-f]{12}$/, portalHost);
    }
  });

  test('an IPv6 endpoint is bracketed in RemoteAddress, as in the Endpoint line', () => {
    const { vpn } = parseProfile(
      renderAppleMobileconfig(
        { ...profile, wireGuard: { ...profile.wireGuard, hostName: '2001:db8::1' } },
        configurationFor('Laptop'),
      ),
    );
    assert.equal(asDict(vpn['VPN'], 'VPN')['RemoteAddress'], '[2001:db8::1]:51820');
  });

  test('display names with markup survive escaped; characters XML cannot carry become U+FFFD', () => {
    const { top, vpn } = parseProfile(
      renderAppleMobileconfig({ ...profile, profileDisplayName: 'R&D <lab>' }, configurationFor('a\u0001b "c" ]]>')),
    );
    assert.equal(vpn['UserDefinedName'], 'R&D <lab> (a\uFFFDb "c" ]]>)');
    assert.equal(top['PayloadDisplayName'], vpn['UserDefinedName']);
  });
});

describe('name-based UUIDs', () => {
  test('match the version 5 example of RFC 9562 (appendix A.4)', () => {
    assert.equal(
      nameBasedUuid('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'www.example.com'),
      '2ED6657D-E927-568B-95E1-2665A8AEA6A2',
    );
  });

  test('refuse a namespace that is not a UUID', () => {
    assert.throws(() => nameBasedUuid('not-a-uuid', 'name'), /not a UUID/);
  });
});

/** wg-quick reads Address, DNS and MTU itself; `wg setconf` does not know them. */
function withoutWgQuickKeys(text: string): string {
  return text
    .split('\n')
    .filter((line) => !/^(Address|DNS|MTU)\s*=/.test(line))
    .join('\n');
}

test('the embedded WgQuickConfig configures a real WireGuard interface with `wg setconf`', async (t) => {
  const lab = new NetnsLab();
  const directory = await mkdtemp(join(tmpdir(), 'mobileconfig-wg-'));
  t.after(async () => {
    await lab.cleanup();
    await rm(directory, { recursive: true, force: true });
  });
  const namespace = await lab.namespace('apple');
  const interfaceName = lab.interfaceName('wga');
  const wireguardGo = namespace.spawn('wireguard-go', ['-f', interfaceName]);
  const socket = `/var/run/wireguard/${interfaceName}.sock`;
  for (let waited = 0; !existsSync(socket); waited += 50) {
    assert.ok(wireguardGo.exitCode === null, 'wireguard-go is running');
    assert.ok(waited < 10_000, `wireguard-go creates ${socket} within 10 s`);
    await sleep(50);
  }

  // An IP literal endpoint: `wg` would otherwise have to resolve the name.
  const configuration = configurationFor('Laptop');
  const { vpn } = parseProfile(
    renderAppleMobileconfig({ ...profile, wireGuard: { ...profile.wireGuard, hostName: '192.0.2.20' } }, configuration),
  );
  const wgQuickConfig = String(asDict(vpn['VendorConfig'], 'VendorConfig')['WgQuickConfig']);
  const file = join(directory, `${interfaceName}.conf`);
  await writeFile(file, withoutWgQuickKeys(wgQuickConfig), { mode: 0o600 });
  await namespace.exec('wg', ['setconf', interfaceName, file]);

  const [interfaceLine, ...peerLines] = (await namespace.exec('wg', ['show', interfaceName, 'dump'])).stdout
    .trim()
    .split('\n');
  assert.equal(
    interfaceLine?.split('\t')[0],
    configuration.wireGuard.privateKey,
    'the interface uses the private key of the configuration',
  );
  assert.equal(peerLines.length, 1, 'exactly one peer');
  const [publicKey, , endpoint, allowedIps, , , , keepAlive] = (peerLines[0] ?? '').split('\t');
  assert.equal(publicKey, server.publicKey);
  assert.equal(endpoint, '192.0.2.20:51820');
  assert.deepEqual(new Set(allowedIps?.split(',')), new Set(['0.0.0.0/0', '::/0']));
  assert.equal(keepAlive, '25');
});
