// Node API /connect: the client's originating address is an IP address as the reference takes it
// (PHP's FILTER_VALIDATE_IP: no zone), refused with 400 otherwise, and nothing written, on
// either database (PostgreSQL's column refused a long zone that SQLite kept). And a connect the
// node stopped waiting for (its agent refused the client), or whose user was disabled while the
// connect script ran, opens no session, and the connect script that said yes to it hears its "D"
// at once.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pino } from 'pino';
import { asNodeNumber } from '../../../src/shared/ids.js';
import { connectionHistory } from '../../../src/storage/connection-log.js';
import { openVpnConfiguration, openVpnEmployees } from '../../support/openvpn-sessions.js';
import { until } from '../../support/until.js';
import { startTestPortal } from '../../support/test-portal.js';

/** The lines a test's connect script wrote to `file` ("C 10.60.0.2"), none before it wrote any. */
function linesIn(file: string): string[] {
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.trimEnd())
    : [];
}

test('an originating address with a zone is refused with 400 and no session is logged; one without is taken', async (t) => {
  const portal = await startTestPortal({ config: openVpnEmployees });
  t.after(() => portal.close());
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'kim');
  const connect = (originatingIp: string) =>
    portal
      .request(`${portal.nodeApiUrl}/connect`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`, 'x-node-number': '0' },
        body: new URLSearchParams({
          profile_id: 'employees',
          common_name: commonName,
          originating_ip: originatingIp,
          ip_four: '10.60.0.2',
          ip_six: 'fd60::1000',
        }),
      })
      .then((answer) => `${answer.status} ${answer.text}`);

  for (const address of ['fe80::1%eth0', `fe80::1%${'a'.repeat(100)}`])
    assert.equal(await connect(address), '400 {"error":"invalid value for \\"originating_ip\\""}', address);
  assert.deepEqual(await connectionHistory(ctx.db, commonName), [], 'no session was logged');
  assert.equal(await connect('2001:db8::7'), '200 OK');
});

test('a connect whose node stopped waiting for the answer during a slow connect script is refused and opens no session', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'slow-connect-'));
  const script = path.join(directory, 'hook.sh');
  const heard = path.join(directory, 'heard');
  // Its "C" is slower than the node waits (its agent gives up after 10 s; the test's node after 200 ms).
  writeFileSync(
    script,
    `#!/bin/sh\necho "$VPN_EVENT $VPN_IP_FOUR \${VPN_BYTES_IN:-}" >> ${heard}\n[ "$VPN_EVENT" = C ] && sleep 1\nexit 0\n`,
    { mode: 0o755 },
  );
  const heardLines = () => linesIn(heard);
  const logged: Record<string, unknown>[] = [];
  const portal = await startTestPortal({
    logger: pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) }),
    config: { ...openVpnEmployees, connectScriptPath: script, connectScriptTimeout: 'PT30S' },
  });
  t.after(async () => {
    await portal.close();
    rmSync(directory, { recursive: true, force: true });
  });
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'kim');
  const connect = (signal?: AbortSignal) =>
    portal.request(`${portal.nodeApiUrl}/connect`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`, 'x-node-number': '0' },
      body: new URLSearchParams({ profile_id: 'employees', common_name: commonName, ip_four: '10.60.0.2' }),
      ...(signal === undefined ? {} : { signal }),
    });
  const decided = () =>
    logged.filter((line) => line['msg'] === 'OpenVPN connect refused' || line['msg'] === 'OpenVPN client connected');

  await assert.rejects(connect(AbortSignal.timeout(200)), 'the node gave up waiting');
  for (let tries = 0; tries < 100 && decided().length === 0; tries++)
    await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(
    decided().map((line) => [line['msg'], line['reason']]),
    [['OpenVPN connect refused', 'the node stopped waiting for the answer']],
  );
  assert.deepEqual(await connectionHistory(ctx.db, commonName), [], 'no session for a client the node refused');
  // The script set up what its "C" sets up: a "D" with nothing carried undoes it.
  await until('the script heard the connect withdrawn', async () => heardLines().length >= 2);
  assert.deepEqual(heardLines(), ['C 10.60.0.2', 'D 10.60.0.2 0']);

  // A node that waits for the script lets the client in.
  assert.equal((await connect()).text, 'OK');
  assert.equal((await connectionHistory(ctx.db, commonName)).length, 1);
  assert.deepEqual(heardLines().slice(2), ['C 10.60.0.2'], 'no "D" while the session lasts');
});

test('a user disabled while the connect script decides on a connect is refused, opens no session, and the script hears its "D"', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'held-connect-'));
  const script = path.join(directory, 'hook.sh');
  const heard = path.join(directory, 'heard');
  const go = path.join(directory, 'go');
  // Its "C" waits until the test lets it go (at most 20 s), as a script that sets up a firewall may.
  writeFileSync(
    script,
    `#!/bin/sh\necho "$VPN_EVENT $VPN_IP_FOUR \${VPN_BYTES_IN:-}" >> ${heard}\n` +
      `if [ "$VPN_EVENT" = C ]; then n=0; while [ ! -e ${go} ] && [ $n -lt 200 ]; do sleep 0.1; n=$((n+1)); done; fi\nexit 0\n`,
    { mode: 0o755 },
  );
  const heardLines = () => linesIn(heard);
  const portal = await startTestPortal({
    config: { ...openVpnEmployees, connectScriptPath: script, connectScriptTimeout: 'PT30S' },
  });
  t.after(async () => {
    await portal.close();
    rmSync(directory, { recursive: true, force: true });
  });
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'kim');

  // Kim's client connects; while the script is at its "C", kim is disabled. The node cannot be
  // reached to disconnect her: only the answer to this connect can keep her out.
  const answer = portal.request(`${portal.nodeApiUrl}/connect`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`, 'x-node-number': '0' },
    body: new URLSearchParams({ profile_id: 'employees', common_name: commonName, ip_four: '10.60.0.2' }),
  });
  await until('the script is at its "C"', async () => heardLines().length >= 1);
  assert.ok((await portal.admin.disableUser('kim')) !== null, 'the disable has a receipt');
  writeFileSync(go, '');

  assert.equal((await answer).text, 'ERR', 'kim was disabled before the portal answered');
  assert.deepEqual(await connectionHistory(ctx.db, commonName), [], 'no session for a client kept out');
  await until('the script heard the connect withdrawn', async () => heardLines().length >= 2);
  assert.deepEqual(heardLines(), ['C 10.60.0.2', 'D 10.60.0.2 0']);
});

test('a connect whose recording fails part way opens no session, leaves no RADIUS Start, and the script hears its "D"; the node asking again lets the client in once', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'failed-connect-'));
  const script = path.join(directory, 'hook.sh');
  const heard = path.join(directory, 'heard');
  writeFileSync(script, `#!/bin/sh\necho "$VPN_EVENT $VPN_IP_FOUR \${VPN_BYTES_IN:-}" >> ${heard}\nexit 0\n`, {
    mode: 0o755,
  });
  writeFileSync(path.join(directory, 'radius.secret'), 'secret', { mode: 0o600 });
  const heardLines = () => linesIn(heard);
  // Nothing answers on the discard port: a Start stays in the outbox for the test to see.
  const portal = await startTestPortal({
    config: {
      ...openVpnEmployees,
      connectScriptPath: script,
      accounting: {
        radius: {
          servers: [{ address: '127.0.0.1:9', secretFile: path.join(directory, 'radius.secret') }],
          interimInterval: 'P1D',
        },
      },
    },
  });
  t.after(async () => {
    await portal.close();
    rmSync(directory, { recursive: true, force: true });
  });
  const ctx = portal.portal.ctx;
  const commonName = await openVpnConfiguration(portal, 'kim');
  // The last listener's write of the first start fails, as a write does when the database goes away.
  let failures = 1;
  ctx.events.inTransaction(async (event) => {
    if (event.type === 'session.started' && failures-- > 0) throw new Error('the database went away');
  });
  let started = 0;
  ctx.events.afterCommit((event) => {
    if (event.type === 'session.started') started++;
  });
  const starts = () =>
    ctx.db
      .selectFrom('radius_outbox')
      .select('record')
      .where('connection_id', '=', commonName)
      .execute()
      .then((rows) => rows.filter((row) => row.record.includes('"Start"')).length);
  const connect = () =>
    portal.request(`${portal.nodeApiUrl}/connect`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ctx.keys.nodeSecret(asNodeNumber(0)) ?? ''}`, 'x-node-number': '0' },
      body: new URLSearchParams({ profile_id: 'employees', common_name: commonName, ip_four: '10.60.0.2' }),
    });

  assert.notEqual((await connect()).text, 'OK', 'the node is not told to let the client in');
  assert.deepEqual(await connectionHistory(ctx.db, commonName), [], 'no session was left open for a client kept out');
  assert.equal(await starts(), 0, 'no RADIUS server hears of a session that did not happen');
  await until('the script heard the connect withdrawn', async () => heardLines().length >= 2);
  assert.deepEqual(heardLines(), ['C 10.60.0.2', 'D 10.60.0.2 0']);

  assert.equal((await connect()).text, 'OK');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal((await connectionHistory(ctx.db, commonName)).length, 1);
  assert.equal(await starts(), 1);
  assert.equal(started, 1, 'the start is announced once, to syslog, the webhooks and the metrics');
});
