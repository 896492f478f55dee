// Keeps the node's OpenVPN servers in step with the portal: every server_config answer lists
// the server files; new ones are written and started, changed ones written and restarted,
// unchanged ones left alone, removed ones stopped (and their files deleted). Serves the
// vpn-daemon's OpenVPN calls over all of them.
import type { Logger } from 'pino';
import type { CommandRunner } from '../process/command-runner.js';
import type { OpenVpnSettings } from '../config.js';
import { OpenVpnUnreachableError, type OpenVpnConnection, type OpenVpnConnections } from '../daemon-api/server.js';
import type { OpenVpnPortal } from './clients.js';
import { ManagementUnavailableError } from './management.js';
import { OpenVpnServer } from './server.js';
import {
  checkServerFile,
  pidFileOf,
  pidFilesIn,
  preparePrivateDirectory,
  removeOtherServerFiles,
  socketPathOf,
  writeServerFile,
} from './server-file.js';
import type { OpenVpnServerFile } from '../node-assignment.js';
import { messageOf } from '../../shared/error-message.js';
import { endRecordedProcess } from '../process/pid-record.js';

/** Like stopping a server: OpenVPN with explicit-exit-notify takes 2 s to tell its clients goodbye. */
const LEFTOVER_GRACE_MS = 6_000;

export interface OpenVpnServiceOptions {
  readonly settings: OpenVpnSettings;
  /** Starts `openvpn`; tests run it in a network namespace. */
  readonly runner: CommandRunner;
  readonly portal: OpenVpnPortal;
  readonly logger: Logger;
  readonly restartDelaysMs?: readonly number[];
}

export class OpenVpnService implements OpenVpnConnections {
  readonly #options: OpenVpnServiceOptions;
  readonly #servers = new Map<string, OpenVpnServer>();
  /** Changes run one at a time (a refresh and stop() may overlap). */
  #serial: Promise<unknown> = Promise.resolve();
  #closed = false;
  /** Whether the processes an earlier agent left running were looked for. */
  #leftoversEnded = false;

  constructor(options: OpenVpnServiceOptions) {
    this.#options = options;
  }

  /** OpenVPN processes the agent runs (also those waiting to be restarted). */
  get processCount(): number {
    return this.#servers.size;
  }

  /** Connected clients over all processes. */
  get connectedCount(): number {
    let count = 0;
    for (const server of this.#servers.values()) count += server.connectedCount;
    return count;
  }

  /** The tun device of every process (`dev` in its file) with its connected clients, for metrics. */
  devices(): { readonly device: string; readonly clients: number }[] {
    return [...this.#servers.values()].map((server) => ({
      device: /^dev (\S+)$/m.exec(server.file.content.reveal())?.[1] ?? server.file.name,
      clients: server.connectedCount,
    }));
  }

  /** The running server of a file, e.g. to read its pid. */
  server(name: string): OpenVpnServer | null {
    return this.#servers.get(name) ?? null;
  }

  /**
   * Ends the servers an agent killed with SIGKILL left running, serving their clients with
   * nobody to disconnect them: all those its pid records name, also of files the portal no
   * longer sends. Once, before the first server starts.
   */
  async endLeftovers(): Promise<void> {
    if (this.#leftoversEnded) return;
    const { settings, logger } = this.#options;
    await Promise.all(
      (await pidFilesIn(settings.managementDir)).map((pidFile) =>
        endRecordedProcess(pidFile, LEFTOVER_GRACE_MS, logger),
      ),
    );
    this.#leftoversEnded = true;
  }

  /** Brings the running servers to the portal's list of files. */
  apply(files: readonly OpenVpnServerFile[]): Promise<void> {
    return this.#inSerial(() => this.#apply(files));
  }

  /**
   * Every connected client; OpenVpnUnreachableError when a server that may have clients cannot
   * say (a partial list would tell the portal that a revoked connection ended while it runs).
   */
  async list(): Promise<readonly OpenVpnConnection[]> {
    const servers = [...this.#servers.values()];
    const unreached: string[] = [];
    const perServer = await Promise.all(
      servers.map(async (server) => {
        try {
          return await server.connections();
        } catch (error) {
          this.#options.logger.warn(
            { server: server.file.name, reason: messageOf(error) },
            'cannot list the clients of an OpenVPN server',
          );
          unreached.push(server.file.name);
          return [];
        }
      }),
    );
    if (unreached.length > 0) throw new OpenVpnUnreachableError(unreached, 'list its connections');
    return perServer
      .flat()
      .flatMap((client) =>
        client.ipFour === null ? [] : [{ commonName: client.commonName, ipFour: client.ipFour, ipSix: client.ipSix }],
      );
  }

  async disconnect(commonName: string): Promise<void> {
    // A process that is not running, or starting, has no connection to end: success (the
    // portal need not take the node for unreachable meanwhile). One that runs and whose
    // management connection is away for a moment may hold one: not a success, or the portal's
    // receipt would say the connection ended while it runs. Its server ends it on reconnecting.
    let ended = 0;
    const unreached: string[] = [];
    for (const server of this.#servers.values()) {
      try {
        ended += await server.disconnect(commonName);
      } catch (error) {
        if (!(error instanceof ManagementUnavailableError)) throw error;
        this.#options.logger.warn(
          { server: server.file.name, reason: error.message },
          'cannot disconnect a client from an OpenVPN server now; it is disconnected once the management connection is back',
        );
        unreached.push(server.file.name);
      }
    }
    if (unreached.length > 0) throw new OpenVpnUnreachableError(unreached, 'end the connection');
    this.#options.logger.info({ commonName, ended }, 'the portal disconnected an OpenVPN client');
  }

  /** Stops every server; their clients' ends are reported to the portal. */
  close(): Promise<void> {
    this.#closed = true;
    return this.#inSerial(async () => {
      const servers = [...this.#servers.values()];
      this.#servers.clear();
      await Promise.all(servers.map((server) => this.#stop(server, 'the node agent stops')));
    });
  }

  async #apply(files: readonly OpenVpnServerFile[]): Promise<void> {
    if (this.#closed) return;
    const { settings, logger } = this.#options;
    await this.endLeftovers();
    if (files.length === 0 && this.#servers.size === 0) return;

    const wanted = new Map<string, OpenVpnServerFile>();
    for (const file of files) {
      const check = checkServerFile(file.content.reveal(), socketPathOf(settings.managementDir, file));
      for (const warning of check.warnings)
        logger.warn({ server: file.name, problem: warning }, 'OpenVPN server file from the portal');
      if (check.errors.length > 0) {
        // A running older version keeps running: it was fine, and it is still the portal's.
        logger.error({ server: file.name, problems: check.errors }, 'OpenVPN server file from the portal refused');
        const running = this.#servers.get(file.name);
        if (running !== undefined) wanted.set(file.name, running.file);
        continue;
      }
      wanted.set(file.name, file);
    }

    const stopping: Promise<void>[] = [];
    for (const [name, server] of this.#servers) {
      const file = wanted.get(name);
      if (file === undefined) {
        this.#servers.delete(name);
        stopping.push(this.#stop(server, 'the portal no longer assigns it to this node'));
      } else if (file.content.reveal() !== server.file.content.reveal()) {
        this.#servers.delete(name);
        stopping.push(this.#stop(server, 'its configuration changed'));
      }
    }
    await Promise.all(stopping);

    const starting: OpenVpnServerFile[] = [...wanted.values()].filter((file) => !this.#servers.has(file.name));
    if (wanted.size > 0) {
      await preparePrivateDirectory(settings.configDir);
      await preparePrivateDirectory(settings.managementDir);
    }
    const started = await Promise.all(starting.map((file) => this.#start(file)));
    const removed = await removeOtherServerFiles(settings.configDir, new Set(wanted.keys()));
    if (removed.length > 0) logger.info({ files: removed }, 'removed OpenVPN server files the portal no longer sends');
    if (starting.length > 0)
      logger.info(
        { started: started.filter(Boolean).length, of: starting.length, running: this.#servers.size },
        'OpenVPN servers applied',
      );
  }

  async #start(file: OpenVpnServerFile): Promise<boolean> {
    const { settings, runner, portal, logger } = this.#options;
    let configFile: string;
    try {
      configFile = await writeServerFile(settings.configDir, file.name, file.content.reveal());
    } catch (error) {
      logger.error({ server: file.name, reason: messageOf(error) }, 'cannot write the OpenVPN server file');
      return false;
    }
    const server = new OpenVpnServer({
      file,
      configFile,
      socketPath: socketPathOf(settings.managementDir, file),
      pidFile: pidFileOf(settings.managementDir, file),
      binary: settings.binary,
      runner,
      portal,
      logger,
      ...(this.#options.restartDelaysMs === undefined ? {} : { restartDelaysMs: this.#options.restartDelaysMs }),
    });
    this.#servers.set(file.name, server);
    logger.info(
      { server: file.name, profileId: file.profileId, proto: file.proto, port: file.port },
      'starting OpenVPN server',
    );
    return server.start();
  }

  async #stop(server: OpenVpnServer, why: string): Promise<void> {
    this.#options.logger.info({ server: server.file.name, why }, 'stopping OpenVPN server');
    try {
      await server.stop();
    } catch (error) {
      this.#options.logger.error({ server: server.file.name, err: error }, 'stopping the OpenVPN server failed');
    }
  }

  #inSerial<T>(step: () => Promise<T>): Promise<T> {
    const next = this.#serial.catch(() => undefined).then(step);
    this.#serial = next;
    return next;
  }
}
