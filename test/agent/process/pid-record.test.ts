// The pid records by which an agent ends what an earlier, killed agent left running: with real
// processes, the one noted is ended, while a pid that now belongs to another process (another
// program, a later start, an earlier boot) is never signalled; and the supervisor notes its
// child while it runs and forgets it once it ended.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { endRecordedProcess, writePidRecord } from '../../../src/agent/process/pid-record.js';
import { SupervisedProcess } from '../../../src/agent/process/supervised-process.js';
import { capturedLog } from '../../support/captured-log.js';
import { until } from '../../support/until.js';

let directory: string;
const children: ChildProcess[] = [];

before(async () => {
  directory = await mkdtemp(join(tmpdir(), 'pid-record-'));
});

after(async () => {
  for (const child of children) child.kill('SIGKILL');
  await rm(directory, { recursive: true, force: true });
});

/** A `sleep` standing for a left-over openvpn: a real process that runs until it is ended. */
function sleeper(): ChildProcess & { pid: number } {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  children.push(child);
  assert.ok(child.pid !== undefined, 'sleep started');
  return child as ChildProcess & { pid: number };
}

const running = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

test('the process a record names is ended with SIGTERM, and the record removed', async () => {
  const file = join(directory, 'ended.pid');
  const child = sleeper();
  await writePidRecord(file, child.pid, 'sleep');
  assert.equal(statSync(file).mode & 0o777, 0o600, 'the record is 0600');
  const exited = once(child, 'exit');
  assert.equal(await endRecordedProcess(file, 5_000, capturedLog('warn').logger), child.pid);
  const [, signal] = (await exited) as [number | null, NodeJS.Signals | null];
  assert.equal(signal, 'SIGTERM');
  assert.equal(existsSync(file), false, 'the record is gone');
});

test('a pid that now runs another program, started later or in an earlier boot is left alone', async () => {
  const child = sleeper();
  const file = join(directory, 'reused.pid');
  await writePidRecord(file, child.pid, 'sleep');
  const record = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  const cases: Record<string, unknown>[] = [
    { ...record, program: 'openvpn' },
    { ...record, startTime: String(Number(record['startTime']) + 1) },
    { ...record, bootId: '00000000-0000-0000-0000-000000000000' },
  ];
  for (const written of cases) {
    await writeFile(file, JSON.stringify(written), { mode: 0o600 });
    assert.equal(await endRecordedProcess(file, 1_000, capturedLog('warn').logger), null, JSON.stringify(written));
    assert.equal(existsSync(file), false, 'a record of nothing left is removed');
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
  assert.equal(running(child), true, 'the process that took the pid still runs');
});

test('a record that is not one is removed without signalling anything', async () => {
  const file = join(directory, 'garbage.pid');
  await writeFile(file, '1\n', { mode: 0o600 });
  assert.equal(await endRecordedProcess(file, 1_000, capturedLog('warn').logger), null);
  assert.equal(existsSync(file), false);
});

test('a supervised child is noted while it runs and forgotten once it stopped; a new start ends the one noted', async () => {
  const file = join(directory, 'supervised.pid');
  const leftover = sleeper();
  await writePidRecord(file, leftover.pid, 'sleep');
  const supervised = new SupervisedProcess({
    what: 'sleeper',
    fields: {},
    logger: capturedLog('warn').logger,
    spawn: () => spawn('sleep', ['60'], { stdio: ['ignore', 'pipe', 'pipe'] }),
    isReady: () => true,
    readyTimeoutMs: 5_000,
    stopGraceMs: 1_000,
    restartDelaysMs: [60_000],
    onOutput: () => {},
    pidRecord: { file, program: 'sleep' },
  });
  await supervised.start();
  await until('the left-over sleeper is gone', async () => !running(leftover), 5_000);
  const noted = JSON.parse(await readFile(file, 'utf8')) as { pid: number };
  assert.equal(noted.pid, supervised.pid, "the record names the supervisor's own child");
  await supervised.stop();
  assert.equal(existsSync(file), false, 'the record is gone with the child');
});
