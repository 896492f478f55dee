// What the benchmarks read of a process they started, and how they stop it: its CPU time and
// peak memory from /proc (so a figure is the process's own, not the machine's), and the one
// rounding their figures get.
import { execFileSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim());

/**
 * CPU seconds (user + system) a process used so far, and those of its children it has waited
 * for (an agent's `wg` processes).
 */
export function processCpuSeconds(pid: number): { own: number; children: number } {
  // Fields after the command name (which may hold spaces): utime is field 14, stime 15, cutime 16, cstime 17.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  const ticks = (index: number): number => fields[index] ?? Number.NaN;
  return { own: (ticks(11) + ticks(12)) / TICKS_PER_SECOND, children: (ticks(13) + ticks(14)) / TICKS_PER_SECOND };
}

/** The CPU time (user + system) the process used so far, in µs. */
export function cpuTimeUs(pid: number): number {
  return processCpuSeconds(pid).own * 1e6;
}

/** The process's resident set now (VmRSS) and at its peak (VmHWM), in MB. */
export function memoryMb(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string): number => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
  return { rssMb: Math.round(kb('VmRSS') / 1024), peakMb: Math.round(kb('VmHWM') / 1024) };
}

/** The process's peak resident set (VmHWM), in MB. */
export function peakRssMb(pid: number): number {
  return memoryMb(pid).peakMb;
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
