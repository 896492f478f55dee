// Group commit on SQLite: transactions that finish in one turn of the event loop, or while
// others wait for the connection, are committed together, and nothing about one shows before
// that commit: not to another connection, not to its caller. A transaction that fails takes only its own changes with it; a
// commit that fails (a full disk) fails every transaction it held and keeps none of them, and
// a transaction that failed over what they wrote fails with it. A
// second connection to the same file plays the other reader. Closing the database commits what
// finished and never what still runs. The statement cache stays bounded and keeps what is in use. SQLite only, on both passes.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { setImmediate as nextTurn, setTimeout as delay } from 'node:timers/promises';
import SqliteDatabase from 'better-sqlite3';
import { CompiledQuery, sql } from 'kysely';
import { connectDatabase, type Db } from '../../src/storage/database.js';
import { GroupCommitSqliteDriver } from '../../src/storage/sqlite-driver.js';
import { mountTmpfs } from '../support/tmpfs.js';

interface Lab {
  readonly db: Db;
  readonly file: string;
  /** The ids another connection sees committed. */
  committed(): number[];
}

async function lab(t: TestContext, dir?: string): Promise<Lab> {
  const folder = dir ?? mkdtempSync(path.join(tmpdir(), 'vpn-portal-group-commit-'));
  const file = path.join(folder, 'db.sqlite');
  const db = connectDatabase({ dialect: 'sqlite', path: file });
  await sql`CREATE TABLE notes (id INTEGER PRIMARY KEY, body BLOB NOT NULL)`.execute(db);
  const other = new SqliteDatabase(file, { readonly: true });
  t.after(async () => {
    other.close();
    await db.destroy();
    if (dir === undefined) rmSync(folder, { recursive: true, force: true });
  });
  return {
    db,
    file,
    committed: () => (other.prepare('SELECT id FROM notes ORDER BY id').all() as { id: number }[]).map((row) => row.id),
  };
}

/** A transaction that writes note `id` and then holds the connection until `open()` is called. */
function heldOpen(db: Db, id: number): { readonly done: Promise<void>; open(): void; resolved(): boolean } {
  let open = (): void => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  let resolved = false;
  const done = db
    .transaction()
    .execute(async (trx) => {
      await sql`INSERT INTO notes (id, body) VALUES (${id}, ${'x'})`.execute(trx);
      await gate;
    })
    .then(() => {
      resolved = true;
    });
  return { done, open, resolved: () => resolved };
}

const insert = (db: Db, id: number, body: unknown = 'x') =>
  sql`INSERT INTO notes (id, body) VALUES (${id}, ${body})`.execute(db);

test('a transaction that finishes while another waits is committed with it, and resolves only then', async (t) => {
  const { db, committed } = await lab(t);
  const first = heldOpen(db, 1);
  await nextTurn();
  let seenBySecond: { readonly committed: number[]; readonly firstResolved: boolean } | undefined;
  const second = db.transaction().execute(async (trx) => {
    seenBySecond = { committed: committed(), firstResolved: first.resolved() };
    await insert(trx, 2);
  });
  await nextTurn();
  first.open();
  await Promise.all([first.done, second]);
  assert.deepEqual(seenBySecond, { committed: [], firstResolved: false }, 'the first waited for the second one commit');
  assert.deepEqual(committed(), [1, 2]);
});

test('transactions that finish in the same turn of the event loop share one commit', async (t) => {
  const { db, file, committed } = await lab(t);
  const other = new SqliteDatabase(file);
  t.after(() => other.close());
  other.pragma('wal_checkpoint(TRUNCATE)');
  await Promise.all(
    Array.from({ length: 20 }, (_, index) => db.transaction().execute((trx) => insert(trx, index + 1))),
  );
  assert.equal(committed().length, 20);
  // Each commit writes the page the rows went to again; twenty commits would write it twenty times.
  const [{ log: framesWritten }] = other.pragma('wal_checkpoint(PASSIVE)') as [{ log: number }];
  assert.ok(framesWritten <= 3, `${framesWritten} pages written to the WAL for 20 one-row transactions`);
});

test('a group whose turn ends while the connection is held without a transaction is committed when it is let go', async (t) => {
  const { db, committed } = await lab(t);
  const first = db.transaction().execute((trx) => insert(trx, 1));
  // Holds the connection past the end of the turn and runs no statement of its own.
  const held = db.connection().execute(() => delay(50));
  const outcome = await Promise.race([first.then(() => 'committed'), delay(3000).then(() => 'still waiting')]);
  await held;
  assert.equal(outcome, 'committed');
  assert.deepEqual(committed(), [1]);
});

test('a transaction that fails in a group takes only its own changes with it', async (t) => {
  const { db, committed } = await lab(t);
  const first = heldOpen(db, 1);
  await nextTurn();
  const failing = db.transaction().execute(async (trx) => {
    await insert(trx, 2);
    throw new Error('changed its mind');
  });
  const third = db.transaction().execute((trx) => insert(trx, 3));
  await nextTurn();
  first.open();
  await assert.rejects(failing, /changed its mind/);
  await Promise.all([first.done, third]);
  assert.deepEqual(committed(), [1, 3]);
});

test('a grouped transaction that changed more pages than SQLite keeps in memory by default still rolls back alone', async (t) => {
  const { db, committed } = await lab(t);
  // Its savepoint journal stays in memory (temp_store MEMORY) instead of a file past 64 KiB.
  const [setting] = (await sql<{ temp_store: number }>`PRAGMA temp_store`.execute(db)).rows;
  assert.equal(setting?.temp_store, 2);
  const first = heldOpen(db, 1);
  await nextTurn();
  const large = db.transaction().execute(async (trx) => {
    // About 256 KiB over many pages, then a failure: every page goes back to what it was.
    for (let id = 100; id < 164; id++)
      await sql`INSERT INTO notes (id, body) VALUES (${id}, ${Buffer.alloc(4096, id)})`.execute(trx);
    await sql`UPDATE notes SET body = ${Buffer.alloc(8, 0)} WHERE id = 1`.execute(trx);
    throw new Error('too much');
  });
  const third = db.transaction().execute((trx) => insert(trx, 3));
  await nextTurn();
  first.open();
  await assert.rejects(large, /too much/);
  await Promise.all([first.done, third]);
  assert.deepEqual(committed(), [1, 3]);
  const [kept] = (await sql<{ body: string }>`SELECT CAST(body AS TEXT) AS body FROM notes WHERE id = 1`.execute(db))
    .rows;
  assert.equal(kept?.body, 'x');
});

test('a transaction still running when the database is closed is rolled back, not committed half-done; the group before it commits', async (t) => {
  const { db, committed } = await lab(t);
  const finished = db.transaction().execute((trx) => insert(trx, 1));
  const running = heldOpen(db, 2);
  await delay(20);
  await db.destroy();
  await finished;
  running.open();
  await assert.rejects(running.done);
  assert.deepEqual(committed(), [1]);
});

test('a query outside a transaction commits a waiting group first: it never reads what is not durable', async (t) => {
  const { db, committed } = await lab(t);
  const first = heldOpen(db, 1);
  await nextTurn();
  const read = sql<{ id: number }>`SELECT id FROM notes`.execute(db).then((result) => ({
    read: result.rows.map((row) => row.id),
    committedThen: committed(),
  }));
  // Keeps a transaction waiting, so the first is folded into a group rather than committed.
  const later = db.transaction().execute((trx) => insert(trx, 2));
  await nextTurn();
  first.open();
  assert.deepEqual(await read, { read: [1], committedThen: [1] });
  await Promise.all([first.done, later]);
  assert.deepEqual(committed(), [1, 2]);
});

test('a commit that fails on a full disk fails every transaction it held and keeps none of them', async (t) => {
  const disk = mountTmpfs(8 * 1024 * 1024);
  t.after(() => disk.unmount());
  const { db, committed } = await lab(t, disk.dir);
  const big = Buffer.alloc(256 * 1024, 0x42);
  let first = heldOpen(db, 1);
  first.open();
  await first.done;

  first = heldOpen(db, 2);
  await nextTurn();
  const second = db.transaction().execute(async (trx) => {
    await insert(trx, 3, big);
    await insert(trx, 4, big);
    // The pages are written to the WAL at the commit, which now finds no room.
    disk.fill();
  });
  await nextTurn();
  first.open();
  await assert.rejects(first.done, { code: 'SQLITE_FULL' });
  await assert.rejects(second, { code: 'SQLITE_FULL' });
  assert.deepEqual(committed(), [1]);

  disk.free();
  await db.transaction().execute((trx) => insert(trx, 5));
  assert.deepEqual(committed(), [1, 5]);
});

test('a transaction refused over what the group before it wrote fails with the commit that could not keep it', async (t) => {
  const disk = mountTmpfs(8 * 1024 * 1024);
  t.after(() => disk.unmount());
  const { db, committed } = await lab(t, disk.dir);
  const first = heldOpen(db, 1);
  await nextTurn();
  const refusing = db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ id: number }>`SELECT id FROM notes WHERE id = 1`.execute(trx);
    disk.fill();
    // Refused because of note 1, which the first transaction wrote and has not committed.
    if (rows.length > 0) throw new Error('refused: note 1 is there');
  });
  await nextTurn();
  first.open();
  await assert.rejects(first.done, { code: 'SQLITE_FULL' });
  // Note 1 was never kept: the refusal would have been over state that does not exist.
  await assert.rejects(refusing, { code: 'SQLITE_FULL' });
  assert.deepEqual(committed(), []);

  disk.free();
  const alone = db.transaction().execute(async () => {
    throw new Error('refused alone');
  });
  await assert.rejects(alone, /refused alone/);
});

test('a statement first run after the statement cache filled is prepared once, not on every run', async (t) => {
  const sqlite = new SqliteDatabase(':memory:');
  t.after(() => sqlite.close());
  const prepared: string[] = [];
  const prepare = sqlite.prepare.bind(sqlite);
  sqlite.prepare = ((text: string) => {
    prepared.push(text);
    return prepare(text);
  }) as typeof sqlite.prepare;
  const driver = new GroupCommitSqliteDriver(sqlite);
  const connection = await driver.acquireConnection();
  const run = (text: string) => connection.executeQuery(CompiledQuery.raw(text, []));

  // A thousand and more different texts, as IN (...) lists of every length make over months.
  for (let length = 1; length <= 1_100; length++) {
    await run(`SELECT 1 WHERE 1 IN (${Array.from({ length }, () => '1').join(', ')})`);
  }
  const hot = 'SELECT 2 AS two';
  for (let times = 0; times < 100; times++) assert.deepEqual((await run(hot)).rows, [{ two: 2 }]);
  assert.equal(prepared.filter((text) => text === hot).length, 1);
  await driver.releaseConnection();
});
