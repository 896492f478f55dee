// The database holds user ids, public keys and client addresses: no other local user may read
// it. The portal makes its data directory 0700 and the SQLite files (db.sqlite, -wal, -shm)
// 0600 — also when an older version or an administrator left them open to everyone — and
// refuses to start, with one line saying what to do, when it cannot.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import SqliteDatabase from 'better-sqlite3';
import { PortalProcess } from '../support/portal-process.js';
import { defaultTestConfig, startTestPortal } from '../support/test-portal.js';

function modeOf(file: string): string {
  return (statSync(file).mode & 0o777).toString(8).padStart(4, '0');
}

/** A fresh folder open to everyone, as `mkdir` under umask 022 makes it. */
function openFolder(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'vpn-portal-permissions-'));
  chmodSync(dir, 0o755);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('a data directory open to everyone (0755) becomes 0700, and db.sqlite, -wal and -shm are made 0600', async (t) => {
  const dataDir = path.join(openFolder(t), 'data');
  mkdirSync(dataDir, { mode: 0o755 });
  chmodSync(dataDir, 0o755);
  const portal = await startTestPortal({ database: 'sqlite', dataDir });
  t.after(() => portal.close());
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);

  assert.equal(modeOf(dataDir), '0700');
  for (const name of ['db.sqlite', 'db.sqlite-wal', 'db.sqlite-shm']) {
    const file = path.join(dataDir, name);
    assert.ok(existsSync(file), `${name} exists after a create`);
    assert.equal(modeOf(file), '0600', name);
  }
  assert.equal(modeOf(path.join(dataDir, 'keys')), '0700');
});

test("an older portal's database files (0644, in a 0755 folder) are made 0600 at start", async (t) => {
  const dataDir = openFolder(t);
  const databaseFile = path.join(dataDir, 'db.sqlite');
  // Another connection keeps the -wal and -shm files there, as a crash would leave them.
  const older = new SqliteDatabase(databaseFile);
  t.after(() => older.close());
  older.pragma('journal_mode = WAL');
  older.exec('CREATE TABLE left_by_an_older_version (x)');
  for (const name of ['db.sqlite', 'db.sqlite-wal', 'db.sqlite-shm'])
    assert.equal(modeOf(path.join(dataDir, name)), '0644', `${name} before`);

  const portal = await startTestPortal({ database: 'sqlite', dataDir });
  t.after(() => portal.close());
  assert.equal(modeOf(dataDir), '0700');
  for (const name of ['db.sqlite', 'db.sqlite-wal', 'db.sqlite-shm'])
    assert.equal(modeOf(path.join(dataDir, name)), '0600', name);
  assert.equal((await portal.post('/create', { user_id: 'alice', profile_id: 'employees' })).status, 200);
});

test('a portal that cannot make its data directory private refuses to start, naming the directory and what to do', async (t) => {
  // The portal runs as "nobody"; the data directory belongs to root and is open to everyone.
  const dir = openFolder(t);
  const dataDir = path.join(dir, 'data');
  mkdirSync(dataDir);
  chmodSync(dataDir, 0o755);
  const configFile = path.join(dir, 'portal.json');
  writeFileSync(configFile, JSON.stringify({ ...defaultTestConfig, dataDir }), { mode: 0o644 });
  const nobody = {
    uid: Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' })),
    gid: Number(execFileSync('id', ['-g', 'nobody'], { encoding: 'utf8' })),
  };

  const portal = new PortalProcess(configFile, { user: nobody });
  t.after(() => portal.stop());
  const [code] = (await once(portal.child, 'exit')) as [number | null];
  assert.equal(code, 1, portal.output.join(''));
  assert.equal(
    portal.output.join(''),
    `folder ${dataDir} is open to other users (mode 0755) and the portal cannot change that (EPERM): run "chmod 700 ${dataDir}" as its owner, or give it to the portal's user with chown\n`,
  );
  assert.equal(modeOf(dataDir), '0755', 'left as it was');
  assert.ok(!existsSync(path.join(dataDir, 'db.sqlite')), 'no database was made');
});
