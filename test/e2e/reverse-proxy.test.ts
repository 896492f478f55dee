// The reverse proxy of docs/operations.md, run for real: nginx from Debian with examples/nginx/vpn-portal.conf
// (only addresses and certificate paths changed), TLS with a throw-away certificate.
// - The Admin API through it, called by `vpn-portal admin` and by curl from an administrator's
//   host (a namespace); the portal sees that host's address through X-Forwarded-For
//   (trustedProxyList), and a client cannot claim another address.
// - WireGuard over TCP through it over TLS 1.3 to the node's ProxyGuard relay, set up on the
//   device as the Linux steps of docs/wireguard-over-tcp.md say (ListenPort 51821, ProxyEndpoint removed);
//   the node believes nginx's X-Forwarded-For (ProxyGuard.trustedProxyList), so the session
//   carries the device's address, not nginx's.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../support/free-port.js';
import { vpnPortalCommand } from '../support/logged-process.js';
import { hostExec, NetnsLab } from '../support/netns.js';
import { renderExample, startNginx, throwawayCertificate } from '../support/nginx.js';
import { startTestPortal } from '../support/test-portal.js';
import { LAB_GATEWAY, LAB_PROFILE, startTunnelLab } from '../support/tunnel-lab.js';

const UOTLV_CLIENT = new URL('../support/uotlv-client-main.ts', import.meta.url).pathname;

function tempDir(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'vpn-portal-proxy-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('the Admin API through nginx with TLS: the allow-list sees the administrator through X-Forwarded-For, and nobody can claim that address', async (t) => {
  const directory = tempDir(t);
  const lab = new NetnsLab();
  t.after(() => lab.cleanup());
  const office = await lab.namespace('office');
  const link = lab.subnet();
  await lab.vethPair(
    { namespace: null, address: `${link.first}/30` },
    { namespace: office, address: `${link.second}/30` },
  );
  const proxyPort = await freePort(link.first);
  const publicBase = `https://${link.first}:${proxyPort}/vpn-user-portal/`;
  const portal = await startTestPortal({
    config: { baseUrl: publicBase, adminApi: { allowList: [`${link.second}/32`], trustedProxyList: ['127.0.0.1/32'] } },
  });
  t.after(portal.close);
  const { certificate, key } = await throwawayCertificate(directory, link.first);
  const nginx = await startNginx(
    directory,
    renderExample([
      ['listen 443 ssl;', `listen ${link.first}:${proxyPort} ssl;`],
      ['    listen [::]:443 ssl;\n', ''],
      ['/etc/ssl/vpn-portal/fullchain.pem', certificate],
      ['/etc/ssl/vpn-portal/privkey.pem', key],
      ['http://127.0.0.1:8080', portal.portal.url],
    ]),
    null,
    { host: link.first, port: proxyPort },
  );
  t.after(nginx.stop);
  const keyFile = portal.portal.ctx.keys.adminApiKeyPath;

  // The administrator's host: vpn-portal admin, trusting the proxy's certificate.
  const [node = '', ...vpnPortal] = vpnPortalCommand();
  const cli = (args: readonly string[]) =>
    office.run(node, [...vpnPortal, 'admin', ...args, '--url', publicBase, '--key-file', keyFile], {
      env: { NODE_EXTRA_CA_CERTS: certificate },
    });
  const created = await cli(['create', 'alice', 'employees', '--json']);
  assert.equal(created.exitCode, 0, `${created.stderr}\n${nginx.log()}`);
  assert.match((JSON.parse(created.stdout) as { configuration: string }).configuration, /^\[Interface\]/);
  assert.equal((await cli(['users'])).stdout, 'USER   DIRECTORY\nalice\n');
  // And curl, as docs/admin-api-guide.md writes its calls.
  const curl = await office.exec('curl', [
    '-s',
    '--cacert',
    certificate,
    '-H',
    `Authorization: Bearer ${portal.secret}`,
    `${publicBase}admin/api/v1/users`,
  ]);
  assert.deepEqual(JSON.parse(curl.stdout), { users: ['alice'] });

  // The proxy's own host is not in the allow-list, and claiming the office's address does not help.
  for (const headers of [[], ['-H', `X-Forwarded-For: ${link.second}`]]) {
    const refused = await hostExec('curl', [
      '-s',
      '--cacert',
      certificate,
      ...headers,
      '-H',
      `Authorization: Bearer ${portal.secret}`,
      `${publicBase}admin/api/v1/users`,
    ]);
    assert.deepEqual(
      JSON.parse(refused.stdout),
      { error: 'source address not allowed' },
      `with ${headers.join(' ') || 'no header'}`,
    );
  }
});

test("WireGuard over TCP through nginx over TLS 1.3 reaches the relay, with the file prepared as docs/wireguard-over-tcp.md says for Linux, and the session is the device's address", async (t) => {
  const directory = tempDir(t);
  const proxyPort = 8443;
  const lab = await startTunnelLab({
    portalConfig: ({ nodeAddressForClient }) => ({
      WireGuard: { enableProxy: true, proxyUrl: `https://${nodeAddressForClient}:${proxyPort}/proxyguard` },
    }),
    // The relay on the node's loopback (the default), behind nginx on the same host, which it trusts.
    agentConfig: () => ({ ProxyGuard: { trustedProxyList: ['127.0.0.1/32'] } }),
  });
  t.after(lab.close);
  await lab.agent.waitFor((line) => line.msg === 'serving ProxyGuard (WireGuard over TCP)', 'serving ProxyGuard');
  const address = lab.nodeAddressForClient;
  const { certificate, key } = await throwawayCertificate(directory, address);
  const nginx = await startNginx(
    directory,
    renderExample([
      ['listen 443 ssl;', `listen ${address}:${proxyPort} ssl;`],
      ['    listen [::]:443 ssl;\n', ''],
      ['/etc/ssl/vpn-portal/fullchain.pem', certificate],
      ['/etc/ssl/vpn-portal/privkey.pem', key],
      ['/proxyguard/vpn1.example.org', `/proxyguard/${address}`],
      ['http://10.0.0.11:51821', 'http://127.0.0.1:51821'],
    ]),
    lab.node,
    { host: address, port: proxyPort },
  );
  t.after(nginx.stop);

  const created = await lab.portal.admin.create(
    { user_id: 'alice', profile_id: LAB_PROFILE },
    'application/x-wireguard+tcp-profile',
  );
  const proxyEndpoint = /^ProxyEndpoint = (.*)$/m.exec(created.body)?.[1] ?? '';
  assert.equal(proxyEndpoint, `https://${address}:${proxyPort}/proxyguard/${address}`);
  // docs/wireguard-over-tcp.md, "On a Linux device": ListenPort = 51821 in [Interface], ProxyEndpoint removed;
  // the ProxyGuard client listens on 51820 and forwards to 51821 (here the test's own client).
  const prepared = created.body
    .replace(/^\[Interface\]$/m, '[Interface]\nListenPort = 51821')
    .replace(/^ProxyEndpoint = .*\n?/m, '');
  const interfaceName = lab.lab.interfaceName('wgt');
  const file = join(lab.directory, `${interfaceName}.conf`);
  writeFileSync(file, prepared, { mode: 0o600 });
  const client = lab.client.spawn(
    process.execPath,
    ['--import', 'tsx', UOTLV_CLIENT, '127.0.0.1:51820', proxyEndpoint],
    {
      env: { UOTLV_CA_FILE: certificate },
    },
  );
  let output = '';
  client.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  client.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  for (let waited = 0; !output.includes('ready'); waited += 100) {
    assert.ok(
      client.exitCode === null && waited < 20_000,
      `the ProxyGuard client connects through nginx: ${output}\n${nginx.log()}`,
    );
    await sleep(100);
  }
  await lab.client.exec('wg-quick', ['up', file], { env: { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' } });
  assert.ok(await lab.ping(20, LAB_GATEWAY), `ping through nginx and the relay: ${output}`);
  const { stdout } = await lab.node.exec('ss', ['-Htn', 'state', 'established', '( sport = :51821 )']);
  assert.equal(stdout.trim().split('\n').filter(Boolean).length, 1, 'one connection from nginx to the relay');

  // The relay's peer is nginx on 127.0.0.1; the session names the device, as nginx saw it.
  await lab.portal.reconcile();
  const publicKey = (await lab.client.exec('wg', ['show', interfaceName, 'public-key'])).stdout.trim();
  const sessions = (await lab.portal.admin.connectionLog({ connection_id: publicKey })).connection_log;
  assert.deepEqual(
    sessions.map((session) => session.originating_ip),
    [lab.clientAddress],
    "the device's address from X-Forwarded-For, not nginx's 127.0.0.1",
  );
});
