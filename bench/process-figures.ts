// What the benchmarks read of a process they started, and how they stop it: its CPU time and
// peak memory from /proc (so a figure is the process's own, not the machine's), and the one
// rounding their figures get.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/** The CPU time (user + system) the process used so far, in µs. */
export function cpuTimeUs(pid: number): number {
  // Fields after the command name (which may hold spaces): utime is field 14, stime 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1e6;
}

/** The process's peak resident set (VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? Number.NaN : Math.round(Number(match[1]) / 1024);
}

/** Stops a process the bench started (SIGTERM) and waits until it exited; nothing if it has. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

/** A figure to one decimal. */
export function round(value: number): number {
  return Math.round(value * 10) / 10;
}
