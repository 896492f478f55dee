// An administrator writes the node's configuration file and key file; the agent reads them,
// fills in defaults, and names the file and the key of every mistake.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadNodeAgentConfig, NodeAgentConfigError } from '../../src/agent/config.js';
import { NodeKeyError, readNodeKey } from '../../src/agent/node-key.js';

describe('the node configuration file', () => {
  let directory: string;
  const write = async (name: string, content: string): Promise<string> => {
    const file = join(directory, name);
    await writeFile(file, content, { mode: 0o600 });
    return file;
  };
  const expectRefusal = async (file: string, pattern: RegExp): Promise<void> => {
    await assert.rejects(loadNodeAgentConfig(file), (error: unknown) => {
      assert.ok(error instanceof NodeAgentConfigError, `a configuration error, not ${String(error)}`);
      assert.ok(error.message.includes(file), `the message names the file: ${error.message}`);
      assert.match(error.message, pattern);
      return true;
    });
  };

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'node-agent-config-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  test('a complete file is read as written, with the key file found next to it', async () => {
    const file = await write(
      'complete.json',
      JSON.stringify({
        apiUrl: 'https://portal.example.org/vpn-user-portal/node-api.php',
        nodeNumber: 3,
        nodeKeyFile: './node-data/node.key',
        listen: { host: '198.18.0.2', port: 41195 },
        WireGuard: { interfaceName: 'wg1', implementation: 'wireguard-go', endpointFile: 'state/endpoints.json' },
        ProxyGuard: { trustedProxyList: ['10.0.0.5/32', 'fd00::/64'] },
        profileIdList: ['employees'],
      }),
    );
    const config = await loadNodeAgentConfig(file);
    assert.equal(config.apiUrl.href, 'https://portal.example.org/vpn-user-portal/node-api.php');
    assert.equal(config.nodeNumber, 3);
    assert.equal(config.nodeKeyFile, join(directory, 'node-data', 'node.key'));
    assert.deepEqual(config.listen, { host: '198.18.0.2', port: 41195 });
    assert.deepEqual(config.wireGuard, {
      interfaceName: 'wg1',
      implementation: 'wireguard-go',
      endpointFile: join(directory, 'state', 'endpoints.json'),
      removalFile: join(directory, 'state', 'wireguard-removals.jsonl'),
    });
    assert.deepEqual(config.proxyGuard.trustedProxyList, ['10.0.0.5/32', 'fd00::/64']);
    assert.deepEqual(config.profileIdList, ['employees']);
  });

  test('nat is off by default, true masquerades, and an object is deterministic NAT with 2000 ports per client unless told', async () => {
    const read = async (nat: unknown) =>
      (await loadNodeAgentConfig(await write('nat-mode.json', JSON.stringify({ nodeKeyFile: 'k', nat })))).nat;
    assert.equal(
      (await loadNodeAgentConfig(await write('no-nat.json', JSON.stringify({ nodeKeyFile: 'k' })))).nat,
      null,
    );
    assert.equal(await read(false), null);
    assert.deepEqual(await read(true), { mode: 'masquerade' });
    assert.deepEqual(await read({ publicAddresses: ['192.0.2.10', '192.0.2.11'] }), {
      mode: 'deterministic',
      publicAddresses: ['192.0.2.10', '192.0.2.11'],
      portsPerClient: 2000,
    });
    assert.deepEqual(await read({ publicAddresses: ['192.0.2.10'], portsPerClient: 64512 }), {
      mode: 'deterministic',
      publicAddresses: ['192.0.2.10'],
      portsPerClient: 64512,
    });
  });

  test('only the key file is required; everything else has a default', async () => {
    const file = await write('minimal.json', JSON.stringify({ nodeKeyFile: '/etc/vpn-portal/node.key' }));
    const config = await loadNodeAgentConfig(file);
    assert.equal(config.apiUrl.href, 'http://127.0.0.1:8080/vpn-user-portal/node-api.php');
    assert.equal(config.nodeNumber, 0);
    assert.equal(config.nodeKeyFile, '/etc/vpn-portal/node.key');
    assert.deepEqual(config.listen, { host: '127.0.0.1', port: 41194 });
    assert.deepEqual(config.wireGuard, {
      interfaceName: 'wg0',
      implementation: 'auto',
      endpointFile: '/var/lib/vpn-portal-node/wireguard-endpoints.json',
      removalFile: '/var/lib/vpn-portal-node/wireguard-removals.jsonl',
    });
    assert.deepEqual(config.proxyGuard.trustedProxyList, [], "the relay believes nobody's X-Forwarded-For");
    assert.deepEqual(config.profileIdList, []);
    assert.equal(config.refreshIntervalMs, 60_000);
  });

  test('unknown keys are errors that name the key, also inside sections', async () => {
    await expectRefusal(
      await write('typo.json', JSON.stringify({ nodeKeyFile: 'k', nodeNumbr: 1 })),
      /unknown key "nodeNumbr"/,
    );
    await expectRefusal(
      await write('nested.json', JSON.stringify({ nodeKeyFile: 'k', WireGuard: { interface: 'wg0' } })),
      /unknown key "WireGuard\.interface"/,
    );
  });

  test('missing or wrong values are errors that name the key', async () => {
    await expectRefusal(await write('nokey.json', JSON.stringify({})), /missing key "nodeKeyFile"/);
    await expectRefusal(
      await write(
        'longname.json',
        JSON.stringify({ nodeKeyFile: 'k', WireGuard: { interfaceName: 'wg-interface-too-long' } }),
      ),
      /"WireGuard\.interfaceName"/,
    );
    await expectRefusal(
      await write('impl.json', JSON.stringify({ nodeKeyFile: 'k', WireGuard: { implementation: 'boringtun' } })),
      /"WireGuard\.implementation"/,
    );
    await expectRefusal(
      await write('port.json', JSON.stringify({ nodeKeyFile: 'k', listen: { port: 70000 } })),
      /"listen\.port"/,
    );
    await expectRefusal(
      await write('text.json', JSON.stringify({ nodeKeyFile: 'k', listen: { port: '80' } })),
      /"listen\.port": Invalid input: expected number/,
    );
    await expectRefusal(
      await write('url.json', JSON.stringify({ nodeKeyFile: 'k', apiUrl: 'ftp://portal' })),
      /"apiUrl"/,
    );
    await expectRefusal(
      await write('nat.json', JSON.stringify({ nodeKeyFile: 'k', nat: { publicAddresses: ['2001:db8::1'] } })),
      /"nat\.publicAddresses\.0": must be an IPv4 address/,
    );
    await expectRefusal(
      await write(
        'ports.json',
        JSON.stringify({ nodeKeyFile: 'k', nat: { publicAddresses: ['192.0.2.10'], portsPerClient: 10 } }),
      ),
      /"nat\.portsPerClient": Too small: expected number to be >=64/,
    );
    await expectRefusal(
      await write('noaddr.json', JSON.stringify({ nodeKeyFile: 'k', nat: { publicAddresses: [] } })),
      /"nat\.publicAddresses": Too small/,
    );
    await expectRefusal(
      await write('proxy.json', JSON.stringify({ nodeKeyFile: 'k', ProxyGuard: { trustedProxyList: ['127.0.0.1'] } })),
      /"ProxyGuard\.trustedProxyList\.0": must be an IP prefix such as 127\.0\.0\.1\/32/,
    );
    await expectRefusal(await write('natword.json', JSON.stringify({ nodeKeyFile: 'k', nat: 'yes' })), /"nat"/);
    await expectRefusal(await write('broken.json', '{"nodeKeyFile": '), /not valid JSON/);
    await expectRefusal(join(directory, 'absent.json'), /cannot read it \(ENOENT\)/);
  });
});

describe('the node key file', () => {
  let directory: string;
  const key = '0123456789abcdef'.repeat(4);

  before(async () => {
    directory = await mkdtemp(join(tmpdir(), 'node-agent-key-'));
  });
  after(() => rm(directory, { recursive: true, force: true }));

  test('a key with a trailing newline, readable by its owner only, is accepted as is', async () => {
    const file = join(directory, 'node.key');
    await writeFile(file, `${key}\n`, { mode: 0o600 });
    const read = await readNodeKey(file);
    assert.equal(read.key.reveal(), key);
    assert.equal(read.permissionWarning, null);
  });

  test('a key others may read is accepted with a warning', async () => {
    const file = join(directory, 'open.key');
    await writeFile(file, key);
    await chmod(file, 0o644);
    const read = await readNodeKey(file);
    assert.match(read.permissionWarning ?? '', /mode 644; chmod 600/);
  });

  test('a file without a proper key is refused without showing its content', async () => {
    const file = join(directory, 'wrong.key');
    const content = 'ABCDEF'.repeat(10);
    await writeFile(file, content, { mode: 0o600 });
    await assert.rejects(readNodeKey(file), (error: unknown) => {
      assert.ok(error instanceof NodeKeyError, `a key file error, not ${String(error)}`);
      assert.match(error.message, /64 lowercase hexadecimal characters/);
      assert.equal(error.message.includes(content), false);
      return true;
    });
  });
});
