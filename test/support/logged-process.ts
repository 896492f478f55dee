// A `vpn-portal` process a test runs (portal or node agent), with its pino log lines read as
// they arrive: wait for a line, look at what was logged, stop it as systemd would.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { timeLimit } from './until.js';

/** The CLI's entry point, run with tsx from the sources. */
export const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
/** tsx's loader by its full URL, so a command may run in any working directory. */
export const TSX = import.meta.resolve('tsx');

/**
 * `vpn-portal` as a test starts it: from the JavaScript that test/run.sh made of src/ at the
 * start of the run (TEST_CLI_BUILD), else from the sources through tsx. A process started
 * through tsx spends some 0.7 s of CPU compiling before it does anything, and the suite starts
 * a few hundred.
 */
export function vpnPortalCommand(): string[] {
  const build = process.env.TEST_CLI_BUILD;
  return build === undefined || build === '' ? [process.execPath, '--import', TSX, MAIN] : [process.execPath, build];
}

export type LogLine = Record<string, unknown> & { msg?: string; level?: number };

/**
 * How long a started process may take to serve: a guard against a hang, not a speed target. A
 * portal or agent that starts in seconds took over 30 s on a loaded CI machine (2 cores, load 13).
 */
export const START_TIMEOUT_MS = 120_000;

export class LoggedProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  /** Everything written to stdout and stderr, for failure messages and secret checks. */
  readonly output: string[] = [];
  #partial = '';

  constructor(child: ChildProcess) {
    this.child = child;
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => this.#take(chunk));
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => this.output.push(chunk));
  }

  async waitFor(predicate: (line: LogLine) => boolean, what: string, timeoutMs = 20_000): Promise<LogLine> {
    const limit = timeLimit(timeoutMs);
    while (!limit.passed()) {
      const found = this.lines.find(predicate);
      if (found !== undefined) return found;
      if (this.child.exitCode !== null) break;
      await sleep(50);
    }
    throw new Error(`no log line "${what}" within ${timeoutMs} ms; output so far:\n${this.output.join('')}`);
  }

  withMessage(message: string): LogLine[] {
    return this.lines.filter((line) => line.msg === message);
  }

  /** Log lines at level error (50) or above. */
  errors(): LogLine[] {
    return this.lines.filter((line) => (line.level ?? 0) >= 50);
  }

  /** Sends SIGTERM and resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    return code;
  }

  async exitCode(): Promise<number | null> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode;
    const [code] = (await once(this.child, 'exit')) as [number | null];
    return code;
  }

  #take(chunk: string): void {
    this.output.push(chunk);
    const parts = (this.#partial + chunk).split('\n');
    this.#partial = parts.pop() ?? '';
    for (const part of parts) {
      if (part.trim() === '') continue;
      try {
        this.lines.push(JSON.parse(part) as LogLine);
      } catch {
        // Not a log line (a stack trace on a crash): kept as text.
        this.lines.push({ msg: part });
      }
    }
  }
}
