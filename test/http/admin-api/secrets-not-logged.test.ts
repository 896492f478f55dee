// Secrets never reach the log: an administrator runs the portal at its most verbose level,
// uses every kind of call (right and wrong tokens and admin keys, errors, a node that is down, a
// create kept for retries), and finds neither the Admin API secret, nor an admin key, nor a
// client's private key, nor a node's keys, nor the pepper or the answer key in the output,
// nor an enrollment token a device put in a URL, nor (on PostgreSQL) the database password.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { createLogger } from '../../../src/portal.js';
import { revokeAdminKey } from '../../../src/core/access/admin-keys.js';
import { bearer, makeAdminKey, mistyped } from '../../support/admin-keys.js';
import { parseWireGuardFile } from '../../support/wireguard-file.js';
import { startTestPortal, type TestPortal } from '../../support/test-portal.js';

/** A portal that logs everything (trace) into `lines`. */
async function portalLoggingAll(t: TestContext): Promise<{ portal: TestPortal; lines: string[] }> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const portal = await startTestPortal({ logger: createLogger('trace', sink) });
  t.after(() => portal.close());
  return { portal, lines };
}

test('at trace level the log holds no Admin API secret, admin key, client private key or node key', async (t) => {
  const { portal, lines } = await portalLoggingAll(t);

  const privateKeys: string[] = [];
  for (const userId of ['alice', 'bob']) {
    const created = await portal.post('/create', { user_id: userId, profile_id: 'employees' });
    assert.equal(created.status, 200);
    privateKeys.push(parseWireGuardFile(created.text).interface.get('PrivateKey') ?? '');
  }
  await portal.get('/connection_list'); // asks the unreachable node: logged as a node failure
  await portal.get('/users', {}, { authorization: `Bearer ${portal.secret.slice(0, 63)}` }); // a near miss
  await portal.get('/users', {}, { authorization: `bearer ${portal.secret}` }); // right secret, wrong scheme
  await portal.post('/create', { user_id: 'alice', profile_id: 'nope' });
  await portal.post('/disable_user', { user_id: 'alice' });
  await portal.post('/destroy', { user_id: 'bob' });
  // An admin key, used right, mistyped and after revocation, and a create kept for retries.
  const adminKey = await makeAdminKey(portal, 'mdm', { scope: 'write' });
  await portal.get('/users', {}, bearer(adminKey));
  await portal.get('/users', {}, bearer(mistyped(adminKey)));
  const kept = await portal.post(
    '/create',
    { user_id: 'carol', profile_id: 'employees' },
    { ...bearer(adminKey), 'idempotency-key': 'k1' },
  );
  assert.equal(
    (
      await portal.post(
        '/create',
        { user_id: 'carol', profile_id: 'employees' },
        { ...bearer(adminKey), 'idempotency-key': 'k1' },
      )
    ).text,
    kept.text,
  );
  privateKeys.push(parseWireGuardFile(kept.text).interface.get('PrivateKey') ?? '');
  await revokeAdminKey(portal.portal.ctx, 'mdm');
  await portal.get('/users', {}, bearer(adminKey));
  await portal.portal.reconcileNow();

  const log = lines.join('');
  // The log is there and verbose, so finding nothing in it means something.
  assert.match(log, /request answered/);
  assert.match(log, /node 0/);

  const keyDir = portal.portal.ctx.config.keyDir;
  // Every secret under the key directory: the OpenVPN CA and server keys live in folders there;
  // certificates (.crt) are public.
  const keyFiles = readdirSync(keyDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.endsWith('.crt'))
    .map((entry) => readFileSync(path.join(entry.parentPath, entry.name), 'utf8').trim());
  assert.ok(keyFiles.includes(portal.secret));
  for (const secret of [...keyFiles, ...privateKeys, adminKey, adminKey.slice(17)]) {
    assert.ok(secret.length >= 44);
    assert.equal(log.includes(secret), false, 'a secret is in the log');
    // Not even the part that was presented as a near miss.
    assert.equal(log.includes(secret.slice(0, 40)), false, 'part of a secret is in the log');
  }
  assert.doesNotMatch(log, /authorization/i);

  const database = portal.portal.ctx.config.database;
  if (database.dialect === 'postgres') {
    const password = decodeURIComponent(new URL(database.url).password);
    assert.ok(password.length >= 8, 'the test database has a password');
    assert.equal(log.includes(password), false, 'the database password is in the log');
    assert.match(log, /database postgres:\/\/[^:]+:\*\*\*@/, 'the log names the database with its password masked');
  }
});

test('at trace level an enrollment token a device put in the URL of enroll is not in the log', async (t) => {
  const { portal, lines } = await portalLoggingAll(t);
  const made = await portal.post('/enrollment_token', { user_id: 'alice', profile_id: 'employees' });
  assert.equal(made.status, 200, made.text);
  const { enrollment_token: token } = made.json() as { enrollment_token: string };
  // A script that sends the form's fields in the query string: refused, for want of the post
  // parameter, but its URL is what a request's log line names.
  const enrollUrl = `${portal.portal.url}${portal.portal.ctx.config.basePath}/enroll`;
  const query = new URLSearchParams({ enrollment_token: token, public_key: 'x' });
  const refused = await portal.request(`${enrollUrl}?${query}`, { method: 'POST', body: new URLSearchParams() });
  assert.equal(refused.status, 400, refused.text);

  const log = lines.join('');
  assert.match(log, /request answered/);
  assert.match(log, /enrollment_token=\*\*\*/, 'the parameter is named, its value masked');
  assert.equal(log.includes(token), false, 'the enrollment token is in the log');
  assert.equal(log.includes(token.slice(0, 40)), false, 'part of the enrollment token is in the log');
});
