// The move from the embedded SQLite database to PostgreSQL: `vpn-portal db copy` copies
// every table, checks the row counts, refuses a target that holds data, and a portal started
// on the copy answers every call as the one on SQLite did.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Clock } from '../../src/shared/time.js';
import type { WireGuardKey } from '../../src/shared/ids.js';
import { connectDatabase } from '../../src/storage/database.js';
import { wireGuardPublicKey } from '../../src/wireguard/keys.js';
import { createAdminKey } from '../../src/core/access/admin-keys.js';
import { employeesProfile } from '../support/admin-keys.js';
import { latestRevision } from '../../src/storage/revisions.js';
import { runCli } from '../support/portal-process.js';
import { createTestDatabase, dropTestDatabase, postgresServerUrl } from '../support/postgres.js';
import { startTestPortal, type TestPortal } from '../support/test-portal.js';
import { parseWireGuardFile } from '../support/wireguard-file.js';

const twoProfiles = {
  ProfileList: [
    employeesProfile,
    {
      profileId: 'guests',
      displayName: 'Guests',
      hostName: 'vpn.example.org',
      wRangeFour: '10.46.0.0/24',
      wRangeSix: 'fd46::/64',
      nodeUrl: 'http://127.0.0.1:2',
    },
  ],
};

/** One second later at every reading, so every configuration has its own creation time. */
function tickingClock(): Clock {
  let now = Date.now() - 3_600_000;
  return {
    now: () => {
      now += 1000;
      return new Date(now);
    },
  };
}

async function provision(
  portal: TestPortal,
  userId: string,
  profileId = 'employees',
  displayName = 'Laptop',
): Promise<{ key: string; address: string }> {
  const response = await portal.post('/create', { user_id: userId, profile_id: profileId, display_name: displayName });
  assert.equal(response.status, 200, response.text);
  const file = parseWireGuardFile(response.text);
  return {
    key: wireGuardPublicKey(file.interface.get('PrivateKey') as WireGuardKey),
    address: file.interface.get('Address') ?? '',
  };
}

/** Every read-only call, as JSON, to compare two portals. */
async function answers(portal: TestPortal, userIds: readonly string[]): Promise<Record<string, unknown>> {
  const result: Record<string, unknown> = {};
  const targets = [
    '/users',
    '/disabled_users',
    '/connection_list?show_all=on',
    '/connected_users?show_all=on',
    ...userIds.map((id) => `/user_configuration_list?user_id=${id}`),
  ];
  for (const target of targets) {
    const response = await portal.get(target);
    assert.equal(response.status, 200, `${target}: ${response.text}`);
    result[target] = response.json();
  }
  return result;
}

test('db copy from SQLite to PostgreSQL: every table, counts checked, and the portal on the copy answers the same', async (t) => {
  const server = postgresServerUrl();
  const target = await createTestDatabase(server);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-db-copy-'));
  const portals: TestPortal[] = [];
  t.after(async () => {
    for (const portal of portals) await portal.close();
    await dropTestDatabase(server, target.name);
    rmSync(dataDir, { recursive: true, force: true });
  });

  // Made through the Admin API on SQLite: several users and profiles, a disabled user, a
  // deleted configuration and a destroyed user (their addresses are free), an authorization.
  const sqlitePortal = await startTestPortal({
    dataDir,
    database: 'sqlite',
    config: twoProfiles,
    clock: tickingClock(),
  });
  portals.push(sqlitePortal);
  await provision(sqlitePortal, 'alice', 'employees', 'Laptop');
  await provision(sqlitePortal, 'alice', 'employees', 'Phone');
  await provision(sqlitePortal, 'alice', 'guests', 'Tablet');
  const bobs = await provision(sqlitePortal, 'bob');
  await provision(sqlitePortal, 'carol');
  await provision(sqlitePortal, 'Zoë');
  await provision(sqlitePortal, 'eve');
  assert.equal((await sqlitePortal.post('/disable_user', { user_id: 'carol' })).status, 204);
  assert.equal(
    (await sqlitePortal.post('/delete_connection', { user_id: 'bob', connection_id: bobs.key })).status,
    204,
  );
  await provision(sqlitePortal, 'bob');
  assert.equal((await sqlitePortal.post('/destroy', { user_id: 'eve' })).status, 204);
  await sqlitePortal.portal.ctx.db
    .insertInto('oauth_authorizations')
    .values({
      auth_key: 'k1',
      user_id: 'alice',
      client_id: 'org.eduvpn.app',
      scope: 'config',
      authorized_at: '2026-01-01T00:00:00+00:00',
      expires_at: '2099-04-01T00:00:00+00:00',
    })
    .execute();
  // An admin key and the audit log of the calls above move with the database.
  const { token: helpdeskKey } = await createAdminKey(
    sqlitePortal.portal.ctx,
    { name: 'helpdesk', scope: 'read', profiles: null, expiresIn: null, allowList: null },
    ['employees', 'guests'],
  );
  const users = ['alice', 'bob', 'carol', 'Zoë'];
  const before = await answers(sqlitePortal, users);
  const sqliteRevision = await latestRevision(sqlitePortal.portal.ctx.db);
  assert.ok(sqliteRevision > 0, 'the changes above took revisions');
  const sqliteFile = sqlitePortal.database;
  await sqlitePortal.close();

  const copy = await runCli(['db', 'copy', '--from', sqliteFile, '--to', target.url]);
  assert.equal(copy.code, 0, `db copy exits 0: ${copy.stdout}${copy.stderr}`);
  assert.match(copy.stdout, /^users: 4 rows$/m);
  assert.match(copy.stdout, /^oauth_authorizations: 1 rows$/m);
  assert.match(copy.stdout, /^wg_peers: 6 rows$/m);
  assert.match(copy.stdout, /^ip_pools: 2 rows$/m);
  assert.match(copy.stdout, /^ip_pool_free: 1 rows$/m);
  assert.match(copy.stdout, /^admin_keys: 1 rows$/m);
  assert.match(copy.stdout, /^audit_log: 11 rows$/m);
  assert.match(copy.stdout, /the row counts of source and target match/);
  const password = new URL(target.url).password;
  assert.ok(password.length > 0, 'the test server has a password, so its absence from the output means something');
  assert.equal(`${copy.stdout}${copy.stderr}`.includes(password), false, 'the password is not printed');
  assert.match(copy.stdout, /postgres:\*\*\*@/, 'the URL is shown with its password masked');

  // Copying again would mix two databases: refused, and the target is left as it was.
  const again = await runCli(['db', 'copy', '--from', sqliteFile, '--to', target.url]);
  assert.equal(again.code, 1, `a second copy is refused: ${again.stdout}${again.stderr}`);
  assert.match(
    again.stderr,
    /the target database is not empty \(users: 4 rows, oauth_authorizations: 1 rows, wg_peers: 6 rows, ip_pools: 2 rows, ip_pool_free: 1 rows, admin_keys: 1 rows, audit_log: 11 rows, revocations: 3 rows, revocation_nodes: 3 rows, destroyed_users: 1 rows\)/,
  );

  // The same keys (data directory), the database now on PostgreSQL.
  const postgresPortal = await startTestPortal({ dataDir, database: target.url, config: twoProfiles });
  portals.push(postgresPortal);
  // The copy's revisions go on from the source's: nodes holding the source's newer numbers would
  // otherwise ignore the copy's instructions as older.
  assert.equal(await latestRevision(postgresPortal.portal.ctx.db), sqliteRevision, 'the revision counter came along');
  assert.deepEqual(await answers(postgresPortal, users), before, 'every call answers as on SQLite');
  const withHelpdeskKey = await postgresPortal.get('/users', {}, { authorization: `Bearer ${helpdeskKey}` });
  assert.deepEqual(
    withHelpdeskKey.json(),
    { users: [...users].sort() },
    'the admin key made on SQLite works on the copy',
  );
  assert.equal((await postgresPortal.admin.auditLog({ limit: 100 })).audit_log.length, 11, 'the audit log came along');
  const authorizations = await postgresPortal.portal.ctx.db
    .selectFrom('oauth_authorizations')
    .select(['auth_key', 'user_id'])
    .execute();
  assert.deepEqual(authorizations, [{ auth_key: 'k1', user_id: 'alice' }]);
  // The address pools came along: the next configuration takes the address eve left behind, then the next new one.
  assert.match((await provision(postgresPortal, 'frank')).address, /^10\.44\.0\.7\/24,fd44::7\/64$/);
  assert.match((await provision(postgresPortal, 'frank')).address, /^10\.44\.0\.8\/24,fd44::8\/64$/);
});

test('db copy refuses bad arguments and names what is wrong without printing a password', async (t) => {
  const server = postgresServerUrl();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-db-copy-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const password = new URL(server).password;

  const missing = await runCli(['db', 'copy', '--from', `sqlite:${path.join(dataDir, 'db.sqlite')}`]);
  assert.equal(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, /db copy needs --from DATABASE and --to DATABASE/);

  const same = await runCli(['db', 'copy', '--from', server, '--to', server]);
  assert.equal(same.code, 2, same.stderr);
  assert.match(same.stderr, /--from and --to name the same database/);

  const wrong = await runCli(['db', 'copy', '--from', 'mysql://root:hunter2@db/vpn', '--to', server]);
  assert.equal(wrong.code, 2, wrong.stderr);
  assert.match(wrong.stderr, /db copy --from: must be sqlite:PATH or postgres:\/\//);
  assert.equal(`${same.stdout}${same.stderr}${wrong.stderr}`.includes(password), false, 'no password in the messages');
  assert.equal(wrong.stderr.includes('hunter2'), false, 'not even of a URL that was refused');
});

test('db copy fills a PostgreSQL database a portal has already started on: the schema is there, the rows are not', async (t) => {
  const server = postgresServerUrl();
  const target = await createTestDatabase(server);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-db-copy-'));
  t.after(async () => {
    await dropTestDatabase(server, target.name);
    rmSync(dataDir, { recursive: true, force: true });
  });
  const fresh = await startTestPortal({ dataDir, database: target.url });
  await fresh.close();
  const source = await startTestPortal({ dataDir, database: 'sqlite' });
  await provision(source, 'alice');
  await source.close();

  const copy = await runCli(['db', 'copy', '--from', source.database, '--to', target.url]);
  assert.equal(copy.code, 0, `${copy.stdout}${copy.stderr}`);
  const db = connectDatabase({ dialect: 'postgres', url: target.url });
  t.after(() => db.destroy());
  assert.deepEqual(await db.selectFrom('users').select('user_id').execute(), [{ user_id: 'alice' }]);
});
