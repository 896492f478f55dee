// One `openvpn --config FILE` server process, supervised: started through the CommandRunner,
// ready once its management socket took the agent's connection, its output logged at debug
// level, restarted with growing pauses after it dies (and after a start that failed), stopped
// with SIGTERM and, after a grace period, SIGKILL.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { CommandRunner } from './command-runner.js';
import { terminate } from './terminate.js';
import { messageOf } from '../../shared/error-message.js';

export interface OpenVpnProcessOptions {
  /** The server file's name, for log lines. */
  readonly name: string;
  readonly binary: string;
  readonly configFile: string;
  readonly runner: CommandRunner;
  readonly logger: Logger;
  /** True once the management socket accepted the agent's connection. */
  readonly isReady: () => boolean;
  /** After every end of a process that was spawned (crash, failed start, stop), before any restart. */
  readonly onExit: () => Promise<void>;
  readonly readyTimeoutMs?: number;
  readonly restartDelaysMs?: readonly number[];
}

const DEFAULT_READY_TIMEOUT_MS = 15_000;
/** OpenVPN with explicit-exit-notify takes 2 s to tell its clients goodbye. */
const STOP_GRACE_MS = 6_000;
const RESTART_DELAYS_MS = [1_000, 2_000, 5_000, 10_000, 30_000];
/** A run this long counts as healthy: the next crash restarts quickly again. */
const HEALTHY_RUN_MS = 60_000;
const OUTPUT_LINES_KEPT = 20;

export class OpenVpnProcess {
  readonly #options: OpenVpnProcessOptions;
  #child: ChildProcess | null = null;
  /** Settles when the current child's exit has been handled (onExit ran). */
  #exitHandled: Promise<void> = Promise.resolve();
  #stopping = false;
  #restartAttempt = 0;
  #restartTimer: NodeJS.Timeout | null = null;
  #recentOutput: string[] = [];
  #partialLine = '';

  constructor(options: OpenVpnProcessOptions) {
    this.#options = options;
  }

  get pid(): number | null {
    return this.#child?.pid ?? null;
  }

  /**
   * Starts OpenVPN and resolves true once it is ready. A failed first start resolves false
   * (the reason is logged) and is retried in the background like a crash.
   */
  async start(): Promise<boolean> {
    try {
      await this.#run();
      return true;
    } catch (error) {
      if (this.#stopping) return false;
      const restartInMs = this.#scheduleRestart();
      this.#options.logger.error({ server: this.#options.name, reason: messageOf(error), restartInMs }, 'OpenVPN server did not start; trying again');
      return false;
    }
  }

  /** Ends the process (SIGTERM, then SIGKILL) and waits until its end has been handled. */
  async stop(): Promise<void> {
    this.#stopping = true;
    if (this.#restartTimer !== null) clearTimeout(this.#restartTimer);
    this.#restartTimer = null;
    const child = this.#child;
    if (child !== null) await terminate(child, STOP_GRACE_MS);
    await this.#exitHandled;
  }

  async #run(): Promise<void> {
    const { binary, configFile, runner, name } = this.#options;
    this.#recentOutput = [];
    this.#partialLine = '';
    const child = runner.spawn(binary, ['--config', configFile]);
    this.#child = child;
    let readyAt: number | null = null;
    let exited = false;
    this.#exitHandled = new Promise<void>((resolve) => {
      const onEnd = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (exited) return;
        exited = true;
        if (this.#child === child) this.#child = null;
        void this.#options
          .onExit()
          .catch((error: unknown) => this.#options.logger.error({ server: name, err: error }, 'cleaning up after OpenVPN failed'))
          .then(() => {
            resolve();
            if (readyAt !== null) this.#onUnexpectedExit(code, signal, Date.now() - readyAt);
          });
      };
      child.once('exit', onEnd);
      // A program that cannot be started (ENOENT) never emits 'exit', only 'error' and 'close'.
      child.once('close', onEnd);
    });
    child.on('error', (error) => this.#options.logger.error({ server: name, err: error }, 'cannot run OpenVPN'));
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => this.#remember(chunk));
    }

    try {
      await this.#waitUntilReady(() => exited);
    } catch (error) {
      if (!exited) await terminate(child, STOP_GRACE_MS);
      await this.#exitHandled;
      throw error;
    }
    readyAt = Date.now();
    this.#options.logger.info({ server: name, pid: child.pid }, 'OpenVPN server running');
  }

  async #waitUntilReady(hasExited: () => boolean): Promise<void> {
    const deadline = Date.now() + (this.#options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);
    while (Date.now() < deadline) {
      if (hasExited()) throw new Error(`openvpn exited during start-up: ${this.#outputTail()}`);
      if (this.#stopping) throw new Error('stopped during start-up');
      if (this.#options.isReady()) return;
      await sleep(50);
    }
    throw new Error(`openvpn did not open its management socket in time: ${this.#outputTail()}`);
  }

  #remember(chunk: string): void {
    const lines = (this.#partialLine + chunk).split('\n');
    this.#partialLine = lines.pop() ?? '';
    for (const line of lines) {
      const text = line.trim();
      if (text === '') continue;
      this.#options.logger.debug({ server: this.#options.name, openvpn: text }, 'OpenVPN says');
      this.#recentOutput.push(text);
    }
    this.#recentOutput = this.#recentOutput.slice(-OUTPUT_LINES_KEPT);
  }

  #onUnexpectedExit(code: number | null, signal: NodeJS.Signals | null, ranForMs: number): void {
    if (this.#stopping) return;
    if (ranForMs >= HEALTHY_RUN_MS) this.#restartAttempt = 0;
    const restartInMs = this.#scheduleRestart();
    this.#options.logger.error(
      { server: this.#options.name, exitCode: code, signal, restartInMs, output: this.#outputTail() },
      'OpenVPN server exited unexpectedly; restarting it',
    );
  }

  #scheduleRestart(): number {
    const delays = this.#options.restartDelaysMs ?? RESTART_DELAYS_MS;
    const delayMs = delays[Math.min(this.#restartAttempt, delays.length - 1)] ?? 30_000;
    this.#restartAttempt += 1;
    this.#restartTimer = setTimeout(() => void this.#restart(), delayMs);
    return delayMs;
  }

  async #restart(): Promise<void> {
    this.#restartTimer = null;
    if (this.#stopping) return;
    try {
      await this.#run();
    } catch (error) {
      if (this.#stopping) return;
      const restartInMs = this.#scheduleRestart();
      this.#options.logger.error({ server: this.#options.name, reason: messageOf(error), restartInMs }, 'restarting the OpenVPN server failed');
      return;
    }
    this.#options.logger.warn({ server: this.#options.name }, 'OpenVPN server restarted');
  }

  #outputTail(): string {
    return this.#recentOutput.join(' | ') || '(no output)';
  }
}
