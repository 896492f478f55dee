// One `openvpn --config FILE` server process: supervised (see supervised-process.ts), ready once
// its management socket took the agent's connection, its output logged at debug level.
import type { Logger } from 'pino';
import type { CommandRunner } from '../process/command-runner.js';
import { SupervisedProcess } from '../process/supervised-process.js';

export interface OpenVpnProcessOptions {
  /** The server file's name, for log lines. */
  readonly name: string;
  readonly binary: string;
  readonly configFile: string;
  /** Where its pid is noted while it runs (pid-record.ts). */
  readonly pidFile: string;
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

export class OpenVpnProcess {
  readonly #supervised: SupervisedProcess;
  readonly #options: OpenVpnProcessOptions;

  constructor(options: OpenVpnProcessOptions) {
    this.#options = options;
    const { name, binary, configFile, pidFile, runner, logger } = options;
    this.#supervised = new SupervisedProcess({
      what: 'OpenVPN server',
      fields: { server: name },
      logger,
      spawn: () => runner.spawn(binary, ['--config', configFile]),
      isReady: options.isReady,
      readyTimeoutMs: options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
      stopGraceMs: STOP_GRACE_MS,
      restartDelaysMs: options.restartDelaysMs ?? RESTART_DELAYS_MS,
      onOutput: (line) => logger.debug({ server: name, openvpn: line }, 'OpenVPN says'),
      onExit: options.onExit,
      pidRecord: { file: pidFile, program: 'openvpn' },
      onRestarted: async () => logger.info({ server: name, pid: this.pid }, 'OpenVPN server running'),
    });
  }

  get pid(): number | null {
    return this.#supervised.pid;
  }

  /**
   * Starts OpenVPN and resolves true once it is ready. A failed first start resolves false
   * (the reason is logged) and is retried in the background like a crash.
   */
  async start(): Promise<boolean> {
    const started = await this.#supervised.startOrRetry();
    if (started) this.#options.logger.info({ server: this.#options.name, pid: this.pid }, 'OpenVPN server running');
    return started;
  }

  /** Ends the process (SIGTERM, then SIGKILL) and waits until its end has been handled. */
  stop(): Promise<void> {
    return this.#supervised.stop();
  }
}
