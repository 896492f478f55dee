// The agent's removals on disk: what one run records, the next reads back (within ten minutes),
// written before the removal is answered, a bulk of removals in a few writes, a file that grew
// written anew, a line cut short by a crash skipped, and a write that fails logged, not thrown.
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { RemovalFile } from '../../../src/agent/wireguard/removal-file.js';
import { PeerRevisions } from '../../../src/agent/wireguard/revisions.js';

const MINUTE = 60_000;

function folder(t: TestContext): string {
  const directory = mkdtempSync(join(tmpdir(), 'removal-file-'));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

function capturedLogger(): { logger: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level: 'warn' }, sink), lines };
}

/** One agent run: its revisions and its removal file, as the WireGuard service wires them. */
function run(file: string, wallMs: () => number, logger = capturedLogger().logger) {
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

test('a last line cut short by a crash is skipped, the others read', async (t) => {
  const file = join(folder(t), 'removals.jsonl');
  const agent = run(file, Date.now);
  await agent.remove('carol', 3);
  appendFileSync(file, '{"publicKey":"dave","revis');
  const { logger, lines } = capturedLogger();
  const next = run(file, Date.now, logger);
  assert.deepEqual(
    (await next.removals.load()).map((removal) => removal.publicKey),
    ['carol'],
  );
  assert.match(lines.join(''), /lines of the removal memory file could not be read/);
});

test('a removal whose file cannot be written is still answered, and the failure is logged', async (t) => {
  const directory = folder(t);
  // A regular file where the folder should be: mkdir fails.
  writeFileSync(join(directory, 'not-a-folder'), '');
  const { logger, lines } = capturedLogger();
  const agent = run(join(directory, 'not-a-folder', 'removals.jsonl'), Date.now, logger);
  await agent.remove('erin', 4);
  assert.match(lines.join(''), /cannot write the removal memory file/);
});
