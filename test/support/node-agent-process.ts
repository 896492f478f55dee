// Runs `vpn-portal node --config FILE` the way an administrator does, inside a network
// namespace, and reads its pino log lines as they arrive.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Namespace } from './netns.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

export type LogLine = Record<string, unknown> & { msg?: string };

export class NodeAgentProcess {
  readonly child: ChildProcess;
  readonly lines: LogLine[] = [];
  /** Everything written to stdout and stderr, for failure messages and secret checks. */
  readonly output: string[] = [];
  #partial = '';

  constructor(namespace: Namespace, configFile: string) {
    this.child = namespace.spawn(process.execPath, ['--import', 'tsx', MAIN, 'node', '--config', configFile]);
    this.child.stdout?.setEncoding('utf8');
    this.child.stdout?.on('data', (chunk: string) => this.#take(chunk));
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (chunk: string) => this.output.push(chunk));
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

  /** Resolves once the agent serves the vpn-daemon protocol. */
  ready(): Promise<LogLine> {
    return this.waitFor((line) => line.msg === 'serving the vpn-daemon protocol', 'serving the vpn-daemon protocol');
  }

  withMessage(message: string): LogLine[] {
    return this.lines.filter((line) => line.msg === message);
  }

  /** Sends SIGTERM and resolves with the exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    return code;
  }

  async exitCode(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
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
        this.lines.push({ msg: part });
      }
    }
  }
}
