// Runs wireguard-go in the foreground for the interface (the daemonising mode detaches and leaves
// nothing to supervise) and restarts it when it dies (see supervised-process.ts), so a crash
// costs seconds, not the node.
import type { Logger } from 'pino';
import type { CommandRunner } from '../process/command-runner.js';
import { SupervisedProcess } from '../process/supervised-process.js';
import type { WgTool } from './wg-tool.js';

export interface WireGuardGoProcessOptions {
  readonly interfaceName: string;
  /** Where its pid is noted while it runs (pid-record.ts). */
  readonly pidFile: string;
  readonly runner: CommandRunner;
  readonly wg: Pick<WgTool, 'isReachable'>;
  readonly logger: Logger;
  /** Called after an unexpected exit once a new wireguard-go serves a fresh, empty interface. */
  readonly onRestarted: () => Promise<void>;
  readonly readyTimeoutMs?: number;
}

const DEFAULT_READY_TIMEOUT_MS = 10_000;
export const STOP_GRACE_MS = 5_000;
const RESTART_DELAYS_MS = [1_000, 2_000, 5_000, 10_000, 30_000];

export class WireGuardGoProcess {
  readonly #supervised: SupervisedProcess;

  constructor(options: WireGuardGoProcessOptions) {
    const { interfaceName, runner, wg, logger } = options;
    this.#supervised = new SupervisedProcess({
      what: 'wireguard-go',
      fields: { interface: interfaceName },
      logger,
      // WG_PROCESS_FOREGROUND also silences the banner recommending the kernel module.
      spawn: () =>
        runner.spawn('wireguard-go', ['-f', interfaceName], {
          env: { ...process.env, WG_PROCESS_FOREGROUND: '1', LOG_LEVEL: 'error' },
        }),
      // The link must exist in this network namespace; the socket directory is shared by all.
      isReady: async () =>
        (await runner.run('ip', ['link', 'show', 'dev', interfaceName])).exitCode === 0 &&
        (await wg.isReachable(interfaceName)),
      readyTimeoutMs: options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
      stopGraceMs: STOP_GRACE_MS,
      restartDelaysMs: RESTART_DELAYS_MS,
      onOutput: (line) => logger.warn({ interface: interfaceName, wireguardGo: line }, 'wireguard-go says'),
      onRestarted: options.onRestarted,
      pidRecord: { file: options.pidFile, program: 'wireguard-go' },
    });
  }

  get pid(): number | null {
    return this.#supervised.pid;
  }

  /** Starts wireguard-go and resolves once `wg` can configure its interface. */
  start(): Promise<void> {
    return this.#supervised.start();
  }

  /** Ends wireguard-go, which removes its interface and control socket. */
  stop(): Promise<void> {
    return this.#supervised.stop();
  }
}
