// One long-running child the agent depends on (wireguard-go, an openvpn server), supervised the
// same way whatever it is: started and waited for until it is ready, its output kept (the last
// lines explain a crash), restarted with growing pauses when it dies (a run of a minute counts
// as healthy and resets the pauses), stopped with SIGTERM and, after a grace period, SIGKILL.
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { messageOf } from '../../shared/error-message.js';
import { deadlineIn, elapsedSince, monotonicNow, type MonotonicMs } from '../../shared/monotonic.js';
import { endRecordedProcess, removePidRecord, writePidRecord } from './pid-record.js';
import { terminate } from './terminate.js';

export interface SupervisedProcessOptions {
  /** For messages: "wireguard-go", "OpenVPN server". */
  readonly what: string;
  /** Log fields naming this instance, e.g. `{ interface: 'wg0' }`. */
  readonly fields: Readonly<Record<string, unknown>>;
  readonly logger: Logger;
  readonly spawn: () => ChildProcess;
  /** Polled every 50 ms after the start until true. */
  readonly isReady: () => boolean | Promise<boolean>;
  readonly readyTimeoutMs: number;
  readonly stopGraceMs: number;
  readonly restartDelaysMs: readonly number[];
  /** Where each line the child prints goes (its level differs by program). */
  readonly onOutput: (line: string) => void;
  /** After every end of a child that was spawned (crash, failed start, stop), before any restart. */
  readonly onExit?: () => Promise<void>;
  /**
   * Where the running child's pid is noted (pid-record.ts), and the name its /proc/PID/comm
   * shows. Before each start, a process an earlier agent noted there and left running is ended.
   */
  readonly pidRecord?: { readonly file: string; readonly program: string };
  /** After a restart following a crash, once the new child is ready. */
  readonly onRestarted?: () => Promise<void>;
}

/**
 * A run this long counts as healthy: the next crash restarts quickly again. Runs and the wait for
 * readiness are measured on the monotonic clock: a step of the wall clock must neither make a
 * crash loop look healthy nor end the wait for a starting child early.
 */
const HEALTHY_RUN_MS = 60_000;
const OUTPUT_LINES_KEPT = 20;
const READY_POLL_MS = 50;

export class SupervisedProcess {
  readonly #options: SupervisedProcessOptions;
  #child: ChildProcess | null = null;
  /** Settles when the current child's end has been handled (onExit ran). */
  #exitHandled: Promise<void> = Promise.resolve();
  #stopping = false;
  #restartAttempt = 0;
  #restartTimer: NodeJS.Timeout | null = null;
  #recentOutput: string[] = [];
  #partialLine = '';

  constructor(options: SupervisedProcessOptions) {
    this.#options = options;
  }

  get pid(): number | null {
    return this.#child?.pid ?? null;
  }

  /** Starts the child and resolves once it is ready; a failed start throws (and leaves nothing running). */
  async start(): Promise<void> {
    await this.#run();
  }

  /** Like start(), but a failed start is logged and tried again in the background like a crash. */
  async startOrRetry(): Promise<boolean> {
    try {
      await this.#run();
      return true;
    } catch (error) {
      if (this.#stopping) return false;
      const restartInMs = this.#scheduleRestart();
      this.#options.logger.error(
        { ...this.#options.fields, reason: messageOf(error), restartInMs },
        `${this.#options.what} did not start; trying again`,
      );
      return false;
    }
  }

  /** Ends the child (SIGTERM, then SIGKILL) and waits until its end has been handled. */
  async stop(): Promise<void> {
    this.#stopping = true;
    if (this.#restartTimer !== null) clearTimeout(this.#restartTimer);
    this.#restartTimer = null;
    const child = this.#child;
    if (child !== null) await terminate(child, this.#options.stopGraceMs);
    await this.#exitHandled;
  }

  async #run(): Promise<void> {
    const { what, fields, logger } = this.#options;
    this.#recentOutput = [];
    this.#partialLine = '';
    const pidRecord = this.#options.pidRecord;
    if (pidRecord !== undefined) await endRecordedProcess(pidRecord.file, this.#options.stopGraceMs, logger);
    const child = this.#options.spawn();
    this.#child = child;
    let readyAt: MonotonicMs | null = null;
    let exited = false;
    this.#exitHandled = new Promise<void>((resolve) => {
      const onEnd = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (exited) return;
        exited = true;
        if (this.#child === child) this.#child = null;
        void Promise.resolve(
          pidRecord === undefined || child.pid === undefined ? undefined : removePidRecord(pidRecord.file, child.pid),
        )
          .then(() => this.#options.onExit?.())
          .catch((error: unknown) => logger.error({ ...fields, err: error }, `cleaning up after ${what} failed`))
          .then(() => {
            resolve();
            if (readyAt !== null) this.#onUnexpectedExit(code, signal, elapsedSince(readyAt));
          });
      };
      child.once('exit', onEnd);
      // A program that cannot be started (ENOENT) never emits 'exit', only 'error' and 'close'.
      child.once('close', onEnd);
    });
    child.on('error', (error) => logger.error({ ...fields, err: error }, `cannot run ${what}`));
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding('utf8');
      stream?.on('data', (chunk: string) => this.#remember(chunk));
    }

    if (pidRecord !== undefined && child.pid !== undefined) {
      try {
        await writePidRecord(pidRecord.file, child.pid, pidRecord.program);
      } catch (error) {
        logger.error(
          { ...fields, reason: messageOf(error), record: pidRecord.file },
          `cannot note the pid of ${what}; an agent killed with SIGKILL would leave it running`,
        );
      }
    }
    try {
      await this.#waitUntilReady(() => exited);
    } catch (error) {
      if (!exited) await terminate(child, this.#options.stopGraceMs);
      await this.#exitHandled;
      throw error;
    }
    readyAt = monotonicNow();
  }

  async #waitUntilReady(hasExited: () => boolean): Promise<void> {
    const { what } = this.#options;
    const deadline = deadlineIn(this.#options.readyTimeoutMs);
    while (!deadline.passed()) {
      if (hasExited()) throw new Error(`${what} exited during start-up: ${this.#outputTail()}`);
      if (this.#stopping) throw new Error('stopped during start-up');
      if (await this.#options.isReady()) return;
      await sleep(READY_POLL_MS);
    }
    throw new Error(`${what} was not ready in time: ${this.#outputTail()}`);
  }

  #remember(chunk: string): void {
    const lines = (this.#partialLine + chunk).split('\n');
    this.#partialLine = lines.pop() ?? '';
    for (const line of lines) {
      const text = line.trim();
      if (text === '') continue;
      this.#options.onOutput(text);
      this.#recentOutput.push(text);
    }
    this.#recentOutput = this.#recentOutput.slice(-OUTPUT_LINES_KEPT);
  }

  #onUnexpectedExit(code: number | null, signal: NodeJS.Signals | null, ranForMs: number): void {
    if (this.#stopping) return;
    if (ranForMs >= HEALTHY_RUN_MS) this.#restartAttempt = 0;
    const restartInMs = this.#scheduleRestart();
    this.#options.logger.error(
      { ...this.#options.fields, exitCode: code, signal, restartInMs, output: this.#outputTail() },
      `${this.#options.what} exited unexpectedly; restarting it`,
    );
  }

  #scheduleRestart(): number {
    const delays = this.#options.restartDelaysMs;
    const delayMs = delays[Math.min(this.#restartAttempt, delays.length - 1)] ?? 30_000;
    this.#restartAttempt += 1;
    this.#restartTimer = setTimeout(() => void this.#restart(), delayMs);
    return delayMs;
  }

  async #restart(): Promise<void> {
    const { what, fields, logger } = this.#options;
    this.#restartTimer = null;
    if (this.#stopping) return;
    try {
      await this.#run();
    } catch (error) {
      if (this.#stopping) return;
      const restartInMs = this.#scheduleRestart();
      logger.error({ ...fields, reason: messageOf(error), restartInMs }, `restarting ${what} failed`);
      return;
    }
    if (this.#stopping) return;
    logger.warn(fields, `${what} restarted`);
    try {
      await this.#options.onRestarted?.();
    } catch (error) {
      logger.error({ ...fields, err: error }, `setting up ${what} again after its restart failed`);
    }
  }

  #outputTail(): string {
    return this.#recentOutput.join(' | ') || '(no output)';
  }
}
