// A record of a long-running child the agent started (openvpn, wireguard-go): its pid, when it
// started and in which boot, 0600 in a 0700 folder. A child outlives an agent killed with
// SIGKILL (outside systemd, or under KillMode=process) and would go on serving its clients with
// nobody to disconnect them; the next agent reads the record and ends that process before it
// starts its own. The start time and the boot tell a reused pid from the process that was noted.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { z } from 'zod';
import { deadlineIn } from '../../shared/monotonic.js';

const recordSchema = z.strictObject({
  pid: z.number().int().min(1),
  /** Field 22 of /proc/PID/stat: clock ticks after boot. */
  startTime: z.string().regex(/^\d+$/),
  bootId: z.string().min(1),
  /** What /proc/PID/comm says (at most 15 bytes): "openvpn", "wireguard-go". */
  program: z.string().min(1),
});

export type PidRecord = z.infer<typeof recordSchema>;

/** What is known of a running process, or null when there is none (or only its zombie). */
interface ProcessIdentity {
  readonly startTime: string;
  readonly program: string;
}

const POLL_MS = 50;
/** A process stuck in the kernel may take a moment to go after SIGKILL. */
const KILL_WAIT_MS = 5_000;

async function bootId(): Promise<string> {
  return (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
}

async function identityOf(pid: number): Promise<ProcessIdentity | null> {
  let stat: string;
  let comm: string;
  try {
    [stat, comm] = await Promise.all([readFile(`/proc/${pid}/stat`, 'utf8'), readFile(`/proc/${pid}/comm`, 'utf8')]);
  } catch {
    return null;
  }
  // The program's name (field 2) is in parentheses and may hold spaces: count from the last ")".
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTime = fields[19];
  if (state === undefined || startTime === undefined || state === 'Z' || state === 'X') return null;
  return { startTime, program: comm.trim() };
}

/**
 * Notes `pid` (just spawned to run `program`) in `file`, replacing any earlier record. The name
 * is the one given: a child started through a prefix (`ip netns exec`) may not have exec'd yet,
 * and its start time stays the same when it does.
 */
export async function writePidRecord(file: string, pid: number, program: string): Promise<void> {
  const identity = await identityOf(pid);
  // Gone already: there is nothing to leave behind.
  if (identity === null) return;
  const record: PidRecord = { pid, startTime: identity.startTime, bootId: await bootId(), program };
  await mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = join(dirname(file), `.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(temporary, `${JSON.stringify(record)}\n`, { mode: 0o600, flag: 'wx' });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

/** Removes the record if it still names `pid` (a newer child's record is kept). */
export async function removePidRecord(file: string, pid: number): Promise<void> {
  const record = await readPidRecord(file);
  if (record === null || record.pid === pid) await rm(file, { force: true });
}

async function readPidRecord(file: string): Promise<PidRecord | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return null;
  }
  try {
    return recordSchema.parse(JSON.parse(text));
  } catch {
    return null;
  }
}

/**
 * Ends the process a record names when it still runs: the same pid, start time, boot and
 * program (SIGTERM, then SIGKILL after `graceMs`), and removes the record. Answers the pid that
 * was ended, or null when nothing of it was left. A record that cannot be read is removed.
 */
export async function endRecordedProcess(file: string, graceMs: number, logger: Logger): Promise<number | null> {
  const record = await readPidRecord(file);
  if (record === null) {
    await rm(file, { force: true });
    return null;
  }
  const same = async (): Promise<boolean> => {
    const identity = await identityOf(record.pid);
    return identity !== null && identity.startTime === record.startTime && identity.program === record.program;
  };
  let ended: number | null = null;
  if (record.bootId === (await bootId()) && (await same())) {
    logger.warn(
      { program: record.program, pid: record.pid, record: file },
      'ending a process left running by an earlier node agent that did not stop it',
    );
    signal(record.pid, 'SIGTERM');
    const deadline = deadlineIn(graceMs);
    while (!deadline.passed() && (await same())) await sleep(POLL_MS);
    if (await same()) {
      signal(record.pid, 'SIGKILL');
      const killed = deadlineIn(KILL_WAIT_MS);
      while (!killed.passed() && (await same())) await sleep(POLL_MS);
      if (await same()) throw new Error(`${record.program} (pid ${record.pid}) outlived SIGKILL`);
    }
    ended = record.pid;
  }
  await rm(file, { force: true });
  return ended;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Gone meanwhile.
  }
}
