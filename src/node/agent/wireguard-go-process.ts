import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { CommandRunner } from './command-runner.js';
import { terminate } from './terminate.js';
import type { WgTool } from './wg-tool.js';

export interface WireGuardGoProcessOptions {
  readonly interfaceName: string;
  readonly runner: CommandRunner;
  readonly wg: Pick<WgTool, 'isReachable'>;
  readonly logger: Logger;
  /** Called after an unexpected exit once a new wireguard-go serves a fresh, empty interface. */
  readonly onRestarted: () => Promise<void>;
  readonly readyTimeoutMs?: number;
}

const DEFAULT_READY_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 5_000;
const RESTART_DELAYS_MS = [1_000, 2_000, 5_000, 10_000, 30_000];
/** A run this long counts as healthy: the next crash restarts quickly again. */
const HEALTHY_RUN_MS = 60_000;
const OUTPUT_LINES_KEPT = 20;

/**
 * Runs `wireguard-go -f IFNAME` as a supervised child: foreground mode, because the
 * daemonising mode detaches and leaves nothing to supervise. Restarts it after a crash.
 */
export class WireGuardGoProcess {
  readonly #options: WireGuardGoProcessOptions;
  #child: ChildProcess | null = null;
  #stopping = false;
  #restartAttempt = 0;
  #restartTimer: NodeJS.Timeout | null = null;
  #recentOutput: string[] = [];

  constructor(options: WireGuardGoProcessOptions) {
    this.#options = options;
  }

  get pid(): number | null {
    return this.#child?.pid ?? null;
  }

  /** Starts wireguard-go and resolves once `wg` can configure its interface. */
  async start(): Promise<void> {
    const child = this.#spawn();
    let readyAt: number | null = null;
    // Listening from the start: an exit right after the readiness check is not missed.
    child.once('exit', (code, signal) => {
      if (readyAt !== null && this.#child === child) this.#onExit(code, signal, Date.now() - readyAt);
    });
    try {
      await this.#waitUntilReady(child);
    } catch (error) {
      this.#child = null;
      await terminate(child, STOP_GRACE_MS);
      throw error;
    }
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`wireguard-go exited right after start: ${this.#outputTail()}`);
    readyAt = Date.now();
  }

  /** Ends wireguard-go, which removes its interface and control socket. */
  async stop(): Promise<void> {
    this.#stopping = true;
    if (this.#restartTimer !== null) clearTimeout(this.#restartTimer);
    this.#restartTimer = null;
    const child = this.#child;
    this.#child = null;
    if (child !== null) await terminate(child, STOP_GRACE_MS);
  }

  #spawn(): ChildProcess {
    const { interfaceName, runner } = this.#options;
    this.#recentOutput = [];
    const child = runner.spawn('wireguard-go', ['-f', interfaceName], {
      // WG_PROCESS_FOREGROUND also silences the banner recommending the kernel module.
      env: { ...process.env, WG_PROCESS_FOREGROUND: '1', LOG_LEVEL: 'error' },
    });
    this.#child = child;
    child.on('error', (error) => this.#options.logger.error({ err: error }, 'cannot run wireguard-go'));
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => this.#remember(chunk));
    }
    return child;
  }

  #remember(chunk: string): void {
    for (const line of chunk.split('\n')) {
      const text = line.trim();
      if (text === '') continue;
      this.#options.logger.warn({ interface: this.#options.interfaceName, wireguardGo: text }, 'wireguard-go says');
      this.#recentOutput.push(text);
    }
    this.#recentOutput = this.#recentOutput.slice(-OUTPUT_LINES_KEPT);
  }

  async #waitUntilReady(child: ChildProcess): Promise<void> {
    const { interfaceName, runner, wg } = this.#options;
    const deadline = Date.now() + (this.#options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`wireguard-go exited while creating ${interfaceName}: ${this.#outputTail()}`);
      }
      // The link must exist in this network namespace; the socket directory is shared by all.
      const linkShown = await runner.run('ip', ['link', 'show', 'dev', interfaceName]);
      if (linkShown.exitCode === 0 && (await wg.isReachable(interfaceName))) return;
      await sleep(50);
    }
    throw new Error(`wireguard-go did not bring up ${interfaceName} in time: ${this.#outputTail()}`);
  }

  #onExit(code: number | null, signal: NodeJS.Signals | null, ranForMs: number): void {
    if (this.#stopping) return;
    this.#child = null;
    if (ranForMs >= HEALTHY_RUN_MS) this.#restartAttempt = 0;
    const delayMs = this.#scheduleRestart();
    this.#options.logger.error(
      { interface: this.#options.interfaceName, exitCode: code, signal, restartInMs: delayMs, output: this.#outputTail() },
      'wireguard-go exited unexpectedly; restarting it',
    );
  }

  #scheduleRestart(): number {
    const delayMs = RESTART_DELAYS_MS[Math.min(this.#restartAttempt, RESTART_DELAYS_MS.length - 1)] ?? 30_000;
    this.#restartAttempt += 1;
    this.#restartTimer = setTimeout(() => void this.#restart(), delayMs);
    return delayMs;
  }

  async #restart(): Promise<void> {
    this.#restartTimer = null;
    if (this.#stopping) return;
    try {
      await this.start();
    } catch (error) {
      if (this.#stopping) return;
      const delayMs = this.#scheduleRestart();
      this.#options.logger.error({ err: error, restartInMs: delayMs }, 'restarting wireguard-go failed');
      return;
    }
    if (this.#stopping) return;
    try {
      await this.#options.onRestarted();
    } catch (error) {
      this.#options.logger.error({ err: error }, 'reconfiguring the interface after a wireguard-go restart failed');
    }
  }

  #outputTail(): string {
    return this.#recentOutput.join(' | ') || '(no output)';
  }
}
