// The agent's removals on disk: what one run records, the next reads back (within ten minutes),
// written before the removal is answered, a bulk of removals in a few writes, a file that grew
// written anew (and read back by the next start), a line cut short by a crash skipped, a file
// that fails logged, not thrown, and a write a full disk cut short not taking the next with it.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { RemovalFile } from '../../../src/agent/wireguard/removal-file.js';
import { PeerRevisions } from '../../../src/agent/wireguard/revisions.js';
import { capturedLog } from '../../support/captured-log.js';
import { mountTmpfs } from '../../support/tmpfs.js';

const MINUTE = 60_000;

function folder(t: TestContext): string {
  const directory = mkdtempSync(join(tmpdir(), 'removal-file-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/** One agent run: its revisions and its removal file, as the WireGuard service wires them. */
function run(file: string, wallMs: () => number, logger = capturedLog('warn').logger) {
  const revisions = new PeerRevisions();
  const removals = new RemovalFile(file, logger, revisions, wallMs);
  return {
    revisions,
    removals,
    remove: async (key: string, revision: number) => {
      assert.ok(revisions.admit(key, 'remove', revision));
      await removals.record(key, revision);
    },
  };
}

test('a removal recorded by one run is refused to a late add of the next, for ten minutes', async (t) => {
  const file = join(folder(t), 'state', 'wireguard-removals.jsonl');
  let wall = Date.parse('2026-12-01T10:00:00Z');
  const first = run(file, () => wall);
  assert.ok(first.revisions.admit('alice', 'add', 5));
  await first.remove('alice', 7);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(statSync(join(file, '..')).mode & 0o777, 0o700);

  wall += 9 * MINUTE;
  const second = run(file, () => wall);
  second.revisions.restore(await second.removals.load());
  assert.equal(second.revisions.admit('alice', 'add', 5), false, 'the add from before the removal');
  assert.equal(second.revisions.highest, 7);
  assert.equal(second.revisions.admit('alice', 'add', 8), true, 'an enable after it');

  wall += 2 * MINUTE;
  const third = run(file, () => wall);
  assert.deepEqual(await third.removals.load(), [], 'eleven minutes on, long timed out');
});

test('removals asked for together go to disk in a few writes, each answered once it is there', async (t) => {
  const file = join(folder(t), 'removals.jsonl');
  const agent = run(file, Date.now);
  const keys = Array.from({ length: 500 }, (_, index) => `peer-${index}`);
  await Promise.all(keys.map((key, index) => agent.remove(key, 100 + index)));
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  assert.equal(lines.length, 500);
  assert.ok(agent.removals.writes <= 3, `500 removals asked for at once took ${agent.removals.writes} writes`);
  const next = run(file, Date.now);
  const loaded = await next.removals.load();
  assert.equal(loaded.length, 500);
  assert.deepEqual(
    loaded.find((removal) => removal.publicKey === 'peer-42')?.revision,
    142,
    'each key with its own revision',
  );
});

test('a file grown to twice the removals remembered is written anew with only those', async (t) => {
  const file = join(folder(t), 'removals.jsonl');
  const agent = run(file, Date.now);
  // The same key removed again and again (added back in between): one removal remembered.
  for (let revision = 1; revision <= 1_001; revision++) {
    assert.ok(agent.revisions.admit('bob', 'add', revision));
    await agent.remove('bob', revision);
  }
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  assert.ok(lines.length < 10, `written anew, ${lines.length} lines left`);
  const next = run(file, Date.now);
  assert.deepEqual(
    (await next.removals.load()).map((removal) => [removal.publicKey, removal.revision]),
    [['bob', 1_001]],
  );
});

test('a file written anew at a start is read back by the start after it', async (t) => {
  const file = join(folder(t), 'removals.jsonl');
  await run(file, Date.now).remove('alice', 7);
  // The agent restarts: it reads the removals back and writes the file anew before it answers.
  const second = run(file, Date.now);
  second.revisions.restore(await second.removals.load());
  await second.removals.rewrite();
  // …and restarts again, within the ten minutes.
  const third = run(file, Date.now);
  third.revisions.restore(await third.removals.load());
  assert.equal(third.revisions.admit('alice', 'add', 5), false, 'the add from before the removal');
});

test('a last line cut short by a crash is skipped, the others read', async (t) => {
  const file = join(folder(t), 'removals.jsonl');
  const agent = run(file, Date.now);
  await agent.remove('carol', 3);
  appendFileSync(file, '{"publicKey":"dave","revis');
  const log = capturedLog('warn');
  const next = run(file, Date.now, log.logger);
  assert.deepEqual(
    (await next.removals.load()).map((removal) => removal.publicKey),
    ['carol'],
  );
  assert.match(log.text(), /lines of the removal memory file could not be read/);
});

test('a file that can be neither read nor written is logged, and the agent goes on without it', async (t) => {
  const directory = folder(t);
  // A regular file where the folder should be: reading and writing fail.
  writeFileSync(join(directory, 'not-a-folder'), '');
  const log = capturedLog('warn');
  const agent = run(join(directory, 'not-a-folder', 'removals.jsonl'), Date.now, log.logger);
  assert.deepEqual(await agent.removals.load(), []);
  await agent.removals.rewrite();
  await agent.remove('erin', 4);
  const logged = log.text();
  assert.match(logged, /cannot read the removal memory file/);
  assert.match(logged, /cannot write the removal memory file/);
  assert.equal(agent.revisions.admit('erin', 'add', 3), false, 'the removal holds in memory');
});

test('a write cut short by a full disk does not take the next removal, written once there is room, with it', async (t) => {
  const tmpfs = mountTmpfs(1024 * 1024);
  t.after(() => tmpfs.unmount());
  const file = join(tmpfs.dir, 'removals.jsonl');
  const agent = run(file, Date.now);
  await agent.remove('first-peer', 1);
  tmpfs.fill();
  // Removals while the disk is full: answered (logged), until one is cut short at a page's end.
  let revision = 1;
  while (readFileSync(file, 'utf8').endsWith('\n')) {
    assert.ok(revision < 1_000, 'no write was cut short');
    revision++;
    await agent.remove(`peer-while-full-${revision}`, revision);
  }
  tmpfs.free();
  // Room again: this removal is appended and synced before it is answered.
  await agent.remove('mallory', 5_000);

  const next = run(file, Date.now);
  next.revisions.restore(await next.removals.load());
  assert.equal(next.revisions.admit('mallory', 'add', 4_999), false, 'a late add after the restart');
});
