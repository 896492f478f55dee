// The real OpenVPN client on a managed device: `openvpn --config FILE` inside a network
// namespace, with its log collected so a test can wait for "connected", "refused" or "gone".
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Namespace } from './netns.js';

const CONNECTED = 'Initialization Sequence Completed';

export class ManagedOpenVpnClient {
  readonly child: ChildProcess;
  readonly #log: string[] = [];

  private constructor(child: ChildProcess) {
    this.child = child;
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => this.#log.push(chunk));
    }
  }

  /** Writes the file exactly as the portal returned it (0600: it holds a private key) and starts the client. */
  static async start(namespace: Namespace, directory: string, name: string, file: string, device: string): Promise<ManagedOpenVpnClient> {
    const path = join(directory, `${name}.ovpn`);
    await writeFile(path, file, { mode: 0o600 });
    // The file says `dev tun`; the device name is pinned only so the test can read its addresses.
    return new ManagedOpenVpnClient(namespace.spawn('openvpn', ['--config', path, '--dev', device]));
  }

  get log(): string {
    return this.#log.join('');
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Resolves once the tunnel is up; fails with the client's log otherwise. */
  async connected(timeoutMs = 30_000): Promise<void> {
    await this.#waitFor(() => this.log.includes(CONNECTED), 'the tunnel to come up', timeoutMs);
  }

  /** Waits until the log matches (a server's refusal, a restart, ...). */
  async logShows(pattern: RegExp, timeoutMs = 30_000): Promise<void> {
    await this.#waitFor(() => pattern.test(this.log), `the client log to show ${pattern}`, timeoutMs, true);
  }

  /** How often the tunnel came up so far. */
  connections(): number {
    return this.log.split(CONNECTED).length - 1;
  }

  async stop(): Promise<void> {
    if (this.exited) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    await exited;
  }

  async #waitFor(done: () => boolean, what: string, timeoutMs: number, evenAfterExit = false): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (done()) return;
      if (this.exited && !evenAfterExit) break;
      if (this.exited && !done()) break;
      await sleep(100);
    }
    throw new Error(`timed out waiting for ${what}; OpenVPN client log:\n${this.log}`);
  }
}
