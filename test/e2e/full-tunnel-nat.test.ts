// The full tunnel, proven: a profile with `defaultGateway` and a node agent with `"nat": true`.
// Behind the node stands namespace "internet" (the node's default routes point there) with a
// DNS resolver, dnsmasq, and no route back to the client ranges: the client reaches it through
// the tunnel over IPv4 and IPv6, and resolves names with the server its file names, only
// because the node forwards and masquerades. As the "Full tunnel" section of docs/node-agent.md says.
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { readNodeKey } from '../../src/agent/node-key.js';
import { asNodeNumber } from '../../src/shared/ids.js';
import { LAB_PROFILE, startTunnelLab } from '../support/tunnel-lab.js';

const INTERNET_NAME = 'www.internet.test';

test('with nat, a full-tunnel client reaches the internet behind the node over IPv4 and IPv6, and its DNS server there', async (t) => {
  const lab = await startTunnelLab({
    internet: true,
    // The full tunnel of docs/node-agent.md: defaultGateway (the default, spelled out) and DNS servers behind the node.
    profile: ({ internetFour, internetSix }) => ({ defaultGateway: true, dnsServerList: [internetFour, internetSix] }),
    agentConfig: () => ({ nat: true }),
  });
  t.after(lab.close);
  const internet = lab.internetAddresses;
  const { four, six } = internet;

  // dnsmasq as the internet's resolver; --log-queries shows whom it answered.
  const resolver = lab.internet.spawn('dnsmasq', [
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    '--no-resolv',
    '--no-hosts',
    '--bind-interfaces',
    `--listen-address=${four}`,
    `--listen-address=${six}`,
    '--except-interface=lo',
    `--address=/${INTERNET_NAME}/${four}`,
    `--address=/${INTERNET_NAME}/${six}`,
    '--log-queries',
    '--log-facility=-',
    '--pid-file=',
    '--user=root',
  ]);
  const resolverLog: string[] = [];
  resolver.stdout?.on('data', (chunk: Buffer) => resolverLog.push(chunk.toString()));
  resolver.stderr?.on('data', (chunk: Buffer) => resolverLog.push(chunk.toString()));

  const created = await lab.portal.admin.create(
    { user_id: 'alice', profile_id: LAB_PROFILE },
    'application/x-wireguard-profile',
  );
  assert.match(created.body, /^AllowedIPs = 0\.0\.0\.0\/0,::\/0$/m, 'a full tunnel');
  assert.equal(
    /^DNS = (.*)$/m.exec(created.body)?.[1],
    `${four},${six}`,
    'the file names the resolver behind the node',
  );
  // wg-quick runs resolvconf for a DNS line; the test asks the named server directly instead.
  const interfaceName = lab.lab.interfaceName('wgc');
  const file = join(lab.directory, `${interfaceName}.conf`);
  await writeFile(file, created.body.replace(/^DNS = .*\n/m, ''), { mode: 0o600 });
  await lab.client.exec('wg-quick', ['up', file], { env: { WG_QUICK_USERSPACE_IMPLEMENTATION: 'wireguard-go' } });

  assert.ok(await lab.ping(15, four), 'IPv4: the client reaches the internet through the node');
  const six6 = await lab.client.run('ping', ['-6', '-c', '1', '-W', '1', '-w', '10', six]);
  assert.equal(six6.exitCode, 0, `IPv6: the client reaches the internet through the node: ${six6.stdout}`);

  for (const [type, server, expected] of [
    ['A', four, four],
    ['AAAA', six, six],
  ] as const) {
    const answer = await lab.client.exec('dig', ['+short', '+time=2', '+tries=3', `@${server}`, INTERNET_NAME, type]);
    assert.equal(answer.stdout.trim(), expected, `dig @${server} ${type}`);
  }
  // The resolver saw the node's address, never the client's tunnel address: masqueraded.
  for (let waited = 0; waited < 2_000 && !resolverLog.join('').includes('from'); waited += 100) await sleep(100);
  const queries = resolverLog
    .join('')
    .split('\n')
    .filter((line) => line.includes(`query[A] ${INTERNET_NAME}`));
  assert.ok(queries.length > 0, `dnsmasq logged the query: ${resolverLog.join('')}`);
  for (const line of queries) assert.ok(line.endsWith(`from ${internet.nodeFour}`), line);

  // node_info says the node masquerades, and since when.
  const { key: nodeKey } = await readNodeKey(lab.portal.portal.ctx.keys.nodeKeyPath(asNodeNumber(0)));
  const info = (await (
    await fetch(new URL('/i/node', lab.nodeUrl), { headers: { authorization: `Bearer ${nodeKey.reveal()}` } })
  ).json()) as { nat?: { mode: string; applied_at: string } };
  assert.equal(info.nat?.mode, 'masquerade');
  assert.ok(Math.abs(Date.parse(info.nat.applied_at) - Date.now()) < 600_000, `applied_at ${info.nat.applied_at}`);

  // The agent keeps its own table, and removes it when it stops.
  const table = await lab.node.exec('nft', ['list', 'table', 'inet', 'vpn_portal_nat']);
  assert.match(
    table.stdout,
    /ip saddr \{?\s*198\.19\.44\.0\/24\s*\}? ip daddr != \{?\s*198\.19\.44\.0\/24\s*\}? masquerade/,
  );
  assert.match(table.stdout, /ip6 saddr \{?\s*fd00:44::\/64\s*\}? ip6 daddr != \{?\s*fd00:44::\/64\s*\}? masquerade/);
  await lab.stopAgent();
  assert.notEqual(
    (await lab.node.run('nft', ['list', 'table', 'inet', 'vpn_portal_nat'])).exitCode,
    0,
    'the table went with the agent',
  );
});
