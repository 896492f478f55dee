// One OpenVPN server as the agent runs it: the supervised process of one server file, the
// management connection to its socket, and the clients that connection reports.
import { rm } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { CommandRunner } from '../process/command-runner.js';
import { OpenVpnClients, type OpenVpnPortal } from './clients.js';
import { ManagementConnection } from './management.js';
import { OpenVpnProcess } from './process.js';
import type { OpenVpnStatusClient } from './status.js';
import type { OpenVpnServerFile } from '../node-assignment.js';

export interface OpenVpnServerOptions {
  readonly file: OpenVpnServerFile;
  /** Where the file was written. */
  readonly configFile: string;
  readonly socketPath: string;
  /** Where the process's pid is noted while it runs (next to its socket). */
  readonly pidFile: string;
  readonly binary: string;
  readonly runner: CommandRunner;
  readonly portal: OpenVpnPortal;
  readonly logger: Logger;
  readonly restartDelaysMs?: readonly number[];
}

/** How long to wait after an exit for the management connection to deliver OpenVPN's last words. */
const FINAL_NOTIFICATIONS_WAIT_MS = 1_000;

export class OpenVpnServer {
  readonly file: OpenVpnServerFile;
  readonly #options: OpenVpnServerOptions;
  readonly #management: ManagementConnection;
  readonly #clients: OpenVpnClients;
  readonly #process: OpenVpnProcess;
  /** Resolved whenever the management connection ends. */
  #managementEnded: Array<() => void> = [];

  constructor(options: OpenVpnServerOptions) {
    this.file = options.file;
    this.#options = options;
    const logger = options.logger;
    const server = options.file.name;
    this.#management = new ManagementConnection({
      socketPath: options.socketPath,
      logger,
      handlers: {
        onConnected: () => {
          this.#clients.resync().catch((error: unknown) => {
            logger.warn(
              { server, reason: error instanceof Error ? error.message : String(error) },
              'cannot read the clients of the OpenVPN server',
            );
          });
        },
        onDisconnected: () => {
          for (const resolve of this.#managementEnded.splice(0)) resolve();
        },
        onClient: (notification) => this.#clients.handle(notification),
      },
    });
    this.#clients = new OpenVpnClients({
      profileId: options.file.profileId,
      server,
      management: this.#management,
      portal: options.portal,
      logger,
    });
    this.#process = new OpenVpnProcess({
      name: server,
      binary: options.binary,
      configFile: options.configFile,
      pidFile: options.pidFile,
      runner: options.runner,
      logger,
      isReady: () => this.#management.connected,
      onExit: () => this.#afterExit(),
      ...(options.restartDelaysMs === undefined ? {} : { restartDelaysMs: options.restartDelaysMs }),
    });
  }

  get pid(): number | null {
    return this.#process.pid;
  }

  /** Connected clients, as far as the agent heard. */
  get connectedCount(): number {
    return this.#clients.establishedCount;
  }

  /** Starts OpenVPN; false when the first start failed (it is retried in the background). */
  start(): Promise<boolean> {
    this.#management.start();
    return this.#process.start();
  }

  /** Ends the process, reports its clients' ends to the portal, removes the socket file. */
  async stop(): Promise<void> {
    await this.#process.stop();
    await this.#management.close();
    await this.#clients.settle();
    // OpenVPN runs as an unprivileged user by then and cannot remove its root-owned socket.
    await rm(this.#options.socketPath, { force: true });
  }

  /** The connected clients by OpenVPN's own `status` (OpenVpnClients.connections). */
  connections(): Promise<OpenVpnStatusClient[]> {
    return this.#clients.connections();
  }

  /** Ends the connections of this common name; how many were ended. */
  disconnect(commonName: string): Promise<number> {
    return this.#clients.disconnect(commonName);
  }

  async #afterExit(): Promise<void> {
    // On SIGTERM OpenVPN sends a DISCONNECT per client just before it exits; take those first.
    if (this.#management.connected) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FINAL_NOTIFICATIONS_WAIT_MS);
        this.#managementEnded.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    this.#clients.processEnded();
  }
}
