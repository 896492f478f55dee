// Ending a supervised child (wireguard-go, openvpn) politely, then firmly.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';

/** SIGTERM, then SIGKILL if the process is still there after `graceMs`. */
export async function terminate(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const graceful = await Promise.race([
    exited.then(() => true),
    sleep(graceMs, undefined, { ref: false }).then(() => false),
  ]);
  if (!graceful) {
    child.kill('SIGKILL');
    await exited;
  }
}
