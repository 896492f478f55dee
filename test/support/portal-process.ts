// Runs `vpn-portal …` as an administrator does, as a process of its own: `serve` (reading its
// pino log lines as they arrive) and one-shot commands such as `db copy`.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

export type LogLine = Record<string, unknown> & { msg?: string; level?: number };

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs one `vpn-portal` command to its end. */
export function runCli(args: readonly string[], options: { cwd?: string } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', MAIN, ...args], { cwd: options.cwd, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

export class PortalProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  /** Everything written to stdout and stderr, for failure messages and secret checks. */
  readonly output: string[] = [];
  #partial = '';

  /**
   * `user`: run the portal as this user (uid and gid) instead of the test's, as a service account would.
   * `fileLimit`: the process's open-file limit (soft and hard, set by util-linux `prlimit`, which
   * then becomes the portal process), to see what the portal does when descriptors run short.
   */
  constructor(configFile: string, options: { readonly user?: { readonly uid: number; readonly gid: number }; readonly fileLimit?: number } = {}) {
    const serve = [process.execPath, '--import', 'tsx', MAIN, 'serve', '--config', configFile];
    const command = options.fileLimit === undefined ? serve : ['prlimit', `--nofile=${options.fileLimit}:${options.fileLimit}`, '--', ...serve];
    this.child = spawn(command[0] ?? '', command.slice(1), {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.user === undefined ? {} : { uid: options.user.uid, gid: options.user.gid }),
    });
    this.child.stdout?.setEncoding('utf8');
    this.child.stdout?.on('data', (chunk: string) => this.#take(chunk));
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (chunk: string) => this.output.push(chunk));
  }

  /** Resolves with the portal's base URL (`http://127.0.0.1:PORT`) once it serves. */
  async ready(timeoutMs = 30_000): Promise<string> {
    const line = await this.waitFor((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('admin API at '), 'admin API at', timeoutMs);
    const match = /\(listening on (http:\/\/[^)]+)\)/.exec(String(line.msg));
    if (match?.[1] === undefined) throw new Error(`no listening address in "${String(line.msg)}"`);
    return match[1];
  }

  async waitFor(predicate: (line: LogLine) => boolean, what: string, timeoutMs = 20_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const found = this.lines.find(predicate);
      if (found !== undefined) return found;
      if (this.child.exitCode !== null) break;
      await sleep(50);
    }
    throw new Error(`no log line "${what}" within ${timeoutMs} ms; output so far:\n${this.output.join('')}`);
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

  #take(chunk: string): void {
    this.output.push(chunk);
    const text = this.#partial + chunk;
    const complete = text.split('\n');
    this.#partial = complete.pop() ?? '';
    for (const line of complete) {
      if (line.trim() === '') continue;
      try {
        this.lines.push(JSON.parse(line) as LogLine);
      } catch {
        // Not a log line (a stack trace on a crash); kept in output.
      }
    }
  }
}
