// `vpn-portal db status` and `db migrate`, for operators who apply migrations by hand, on the
// database of this test pass (SQLite, or PostgreSQL with TEST_DATABASE_URL); and what both
// databases have in common: the same answers to the same calls.
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { describeDatabase } from '../../src/config/database-location.js';
import { ConfigError, resolvePortalConfig } from '../../src/config/load.js';
import { EXPECTED_MIGRATIONS } from '../support/migrations.js';
import { runCli } from '../support/portal-process.js';
import { createTestDatabase, dropTestDatabase } from '../support/postgres.js';
import { errorBody } from '../support/raw-http.js';
import { defaultTestConfig, startTestPortal } from '../support/test-portal.js';

test('db status shows the migrations pending on a new database, db migrate applies them once, then status shows them applied', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-db-commands-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const server = process.env['TEST_DATABASE_URL'];
  let database = 'sqlite:state/portal.sqlite';
  let password = '';
  if (server !== undefined && server !== '') {
    const created = await createTestDatabase(server);
    t.after(() => dropTestDatabase(server, created.name));
    database = created.url;
    password = new URL(server).password;
  }
  const configFile = path.join(directory, 'portal.json');
  writeFileSync(configFile, JSON.stringify({ ...defaultTestConfig, dataDir: 'data', database }));

  const pending = await runCli(['db', 'status', '--config', configFile]);
  assert.equal(pending.code, 0, pending.stderr);
  assert.match(
    pending.stdout,
    new RegExp(`^${EXPECTED_MIGRATIONS.map((name) => `${name} {2}pending`).join('\\n')}$`, 'm'),
  );
  assert.match(
    pending.stdout,
    new RegExp(
      `^${EXPECTED_MIGRATIONS.length} pending; "vpn-portal serve" applies them at start, or run "vpn-portal db migrate"$`,
      'm',
    ),
  );

  const migrated = await runCli(['db', 'migrate', '--config', configFile]);
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.match(
    migrated.stdout,
    new RegExp(`^${EXPECTED_MIGRATIONS.map((name) => `applied ${name}`).join('\\n')}$`, 'm'),
  );
  const again = await runCli(['db', 'migrate', '--config', configFile]);
  assert.match(again.stdout, /^the schema is up to date$/m);

  const applied = await runCli(['db', 'status', '--config', configFile]);
  assert.match(
    applied.stdout,
    new RegExp(`^${EXPECTED_MIGRATIONS.map((name) => `${name} {2}applied \\d{4}-\\d\\d-\\d\\dT.*`).join('\\n')}$`, 'm'),
  );
  assert.match(applied.stdout, /^the schema is up to date$/m);
  if (password !== '') {
    assert.match(
      applied.stdout,
      /^database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/vpt_/m,
      'the database is named with its password masked',
    );
    for (const output of [pending, migrated, again, applied]) {
      assert.equal(`${output.stdout}${output.stderr}`.includes(password), false, 'the password is never printed');
    }
  } else {
    // A relative SQLite path is taken from the configuration file's folder.
    assert.match(
      applied.stdout,
      new RegExp(`^database sqlite:${path.join(directory, 'state', 'portal.sqlite').replace(/[.\\/]/g, '\\$&')}$`, 'm'),
    );
  }
});

test('both databases answer the same: users sorted bytewise, NUL characters refused before they reach the database', async (t) => {
  const portal = await startTestPortal();
  t.after(() => portal.close());
  // Sorted by UTF-8 bytes as SQLite compares, whatever locale a PostgreSQL database was made with.
  for (const userId of ['émile', 'bob', 'Zed', 'alice', '_admin', 'Alice', '10', '9']) {
    assert.equal((await portal.post('/create', { user_id: userId, profile_id: 'employees' })).status, 200, userId);
  }
  assert.deepEqual((await portal.get('/users')).json(), {
    users: ['10', '9', 'Alice', 'Zed', '_admin', 'alice', 'bob', 'émile'],
  });

  // PostgreSQL cannot store U+0000 in text; SQLite could, but the portal refuses it on both.
  const nulUser = await portal.post('/create', { user_id: 'mallory\u0000', profile_id: 'employees' });
  assert.equal(nulUser.status, 400);
  assert.equal(errorBody(nulUser.text), 'invalid value for "user_id"');
  const nulName = await portal.post('/create', {
    user_id: 'mallory',
    profile_id: 'employees',
    display_name: 'Lap\u0000top',
  });
  assert.equal(nulName.status, 400);
  assert.equal(errorBody(nulName.text), 'invalid value for "display_name"');
  const lookup = await portal.get('/user_configuration_list', { user_id: '\u0000' });
  assert.equal(lookup.status, 400);
  assert.equal((await portal.admin.users()).length, 8, 'nothing was stored');
});

test('the database option takes sqlite:PATH or a PostgreSQL URL; mistakes are named without repeating a password', () => {
  const withDatabase = (database: string) => ({ ...defaultTestConfig, dataDir: '/var/lib/vpn-portal', database });
  const problemsOf = (database: string): string => {
    try {
      resolvePortalConfig(withDatabase(database), 'portal.json');
    } catch (error) {
      assert.ok(error instanceof ConfigError, `a ConfigError, not ${String(error)}`);
      return error.message;
    }
    assert.fail(`${database} was accepted`);
  };

  const url = 'postgres://vpn_portal:s3cr%40t@db.example.org:5432/vpn_portal?sslmode=require';
  const config = resolvePortalConfig(withDatabase(url), 'portal.json');
  assert.deepEqual(config.database, { dialect: 'postgres', url });
  assert.equal(
    describeDatabase(config.database),
    'postgres://vpn_portal:***@db.example.org:5432/vpn_portal?sslmode=require',
  );
  assert.equal(
    resolvePortalConfig(withDatabase('postgresql://db.example.org/vpn'), 'portal.json').database.dialect,
    'postgres',
  );
  assert.equal(
    describeDatabase({ dialect: 'postgres', url: 'postgres://db.example.org/vpn?password=s3cret' }),
    'postgres://db.example.org/vpn?password=***',
  );

  for (const [database, message] of [
    [
      'mysql://root:s3cret@db.example.org/vpn',
      /^portal\.json: database: must be sqlite:PATH or postgres:\/\/USER:PASSWORD@HOST:PORT\/DATABASE$/,
    ],
    ['sqlite:', /^portal\.json: database: must be sqlite:PATH or postgres:\/\//],
    ['postgres://vpn:s3cret@db.example.org:99999/vpn', /^portal\.json: database: is not a valid PostgreSQL URL/],
    ['postgres://vpn:s3cret@db.example.org:5432', /^portal\.json: database: the PostgreSQL URL names no database/],
  ] as const) {
    const problems = problemsOf(database);
    assert.match(problems, message);
    assert.equal(problems.includes('s3cret'), false, `the password is not repeated: ${problems}`);
  }
});

test('db status on a PostgreSQL server that cannot be reached says so in one line, without the password, and exits 1', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-db-commands-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const configFile = path.join(directory, 'portal.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      ...defaultTestConfig,
      dataDir: 'data',
      database: 'postgres://vpn:hunter2-secret@127.0.0.1:1/vpn',
    }),
  );
  const result = await runCli(['db', 'status', '--config', configFile]);
  assert.equal(result.code, 1, result.stderr);
  assert.equal(result.stderr, 'db status: connect ECONNREFUSED 127.0.0.1:1 (ECONNREFUSED)\n');
  assert.equal(`${result.stdout}${result.stderr}`.includes('hunter2'), false, 'no password');
});

test('db copy from a source path with a typo is an error that names the path, and creates no file there', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-db-copy-typo-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const typo = path.join(directory, 'db.sqlit');
  const copy = await runCli([
    'db',
    'copy',
    '--from',
    `sqlite:${typo}`,
    '--to',
    `sqlite:${path.join(directory, 'copy.sqlite')}`,
  ]);
  assert.equal(copy.code, 2, `${copy.stdout}${copy.stderr}`);
  assert.equal(copy.stderr.trim(), `db copy --from: there is no database at ${typo}`);
  assert.equal(existsSync(typo), false, 'no empty database was made at the mistyped path');
  assert.equal(existsSync(path.join(directory, 'copy.sqlite')), false, 'nor a target');
});

test('db copy from a database no portal ever used is an error, not an empty copy', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-db-copy-empty-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  const empty = path.join(directory, 'empty.sqlite');
  writeFileSync(empty, '');
  const copy = await runCli([
    'db',
    'copy',
    '--from',
    `sqlite:${empty}`,
    '--to',
    `sqlite:${path.join(directory, 'copy.sqlite')}`,
  ]);
  assert.equal(copy.code, 2, `${copy.stdout}${copy.stderr}`);
  assert.equal(
    copy.stderr.trim(),
    `db copy --from: sqlite:${empty} holds no portal data (it was never used by a portal)`,
  );
});

test('db copy from a file that is no database says so and leaves the file as it was, mode included', async (t) => {
  const directory = mkdtempSync(path.join(tmpdir(), 'vpn-portal-db-copy-not-a-database-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  // The administrator meant the database and named the portal's configuration file, which the
  // portal's user reads through its group.
  const configFile = path.join(directory, 'portal.json');
  writeFileSync(configFile, JSON.stringify(defaultTestConfig));
  chmodSync(configFile, 0o640);
  const copy = await runCli([
    'db',
    'copy',
    '--from',
    `sqlite:${configFile}`,
    '--to',
    `sqlite:${path.join(directory, 'copy.sqlite')}`,
  ]);
  assert.equal(copy.code, 1, `${copy.stdout}${copy.stderr}`);
  assert.equal(copy.stderr.trim(), 'db copy: file is not a database (SQLITE_NOTADB)');
  assert.equal(
    (statSync(configFile).mode & 0o777).toString(8),
    '640',
    'the file keeps its mode: the portal can still read its configuration',
  );
});
