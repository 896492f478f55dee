// A real `openvpn` client run in a network namespace for tests, with its log at hand.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Namespace } from './netns.js';
import { timeLimit } from './until.js';

export const CONNECTED = /Initialization Sequence Completed/;
export const AUTH_FAILED = /AUTH_FAILED/;

export class OpenVpnClient {
  readonly child: ChildProcess;
  #output = '';
  readonly #exit: Promise<number | null>;

  /** `extraArguments` go after the file's own options, e.g. `--dev NAME` to pin the device name. */
  constructor(namespace: Namespace, configFile: string, extraArguments: readonly string[] = []) {
    this.child = namespace.spawn('openvpn', ['--config', configFile, ...extraArguments]);
    this.#exit = once(this.child, 'exit').then(([code]) => code as number | null);
    for (const stream of [this.child.stdout, this.child.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => {
        this.#output += chunk;
      });
    }
  }

  get output(): string {
    return this.#output;
  }

  /** How often the tunnel came up so far. */
  connections(): number {
    return this.#output.split('Initialization Sequence Completed').length - 1;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Waits until the log matches; fails with the log when the client exits first or time runs out. */
  async waitFor(pattern: RegExp, what: string, timeoutMs = 20_000): Promise<void> {
    const limit = timeLimit(timeoutMs);
    while (!limit.passed()) {
      if (pattern.test(this.#output)) return;
      if (!this.running) break;
      await sleep(50);
    }
    if (pattern.test(this.#output)) return;
    throw new Error(
      `the OpenVPN client did not log "${what}" (${this.running ? 'timed out' : 'it exited'}); its log:\n${this.#output}`,
    );
  }

  /** Resolves with the exit code once the client ended by itself. */
  async exited(timeoutMs = 20_000): Promise<number | null> {
    const result = await Promise.race([this.#exit, sleep(timeoutMs, 'timeout' as const, { ref: false })]);
    if (result === 'timeout')
      throw new Error(`the OpenVPN client is still running after ${timeoutMs} ms; its log:\n${this.#output}`);
    return result;
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    await this.#exit;
  }
}
