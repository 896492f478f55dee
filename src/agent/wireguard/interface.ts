// The node's one WireGuard interface: found, or created with the kernel module or wireguard-go;
// configured from the portal's settings; removed at shut-down when the agent made it.
import type { Logger } from 'pino';
import { runChecked, type CommandRunner } from '../process/command-runner.js';
import type { WireGuardImplementation } from '../config.js';
import { linkExists, readLinkState } from './link-state.js';
import type { WireGuardAssignment } from '../node-assignment.js';
import { STOP_GRACE_MS as WIREGUARD_GO_GRACE_MS, WireGuardGoProcess } from './wireguard-go-process.js';
import { endRecordedProcess } from '../process/pid-record.js';
import { deadlineIn } from '../../shared/monotonic.js';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WgTool } from './wg-tool.js';

/** Who provides the interface: found already there (left alone at exit) or created by the agent. */
export type InterfaceOrigin = 'existing' | 'kernel' | 'wireguard-go';

export interface OpenInterfaceOptions {
  readonly name: string;
  readonly implementation: WireGuardImplementation;
  /** Where the pid of the agent's wireguard-go is noted while it runs (pid-record.ts). */
  readonly pidFile: string;
  readonly runner: CommandRunner;
  readonly wg: WgTool;
  readonly logger: Logger;
  /** Called after wireguard-go was restarted and the interface set up again, without peers. */
  readonly onPeersLost?: () => void;
}

/** WireGuard's own default, used when the portal sets no MTU. */
const DEFAULT_MTU = 1420;
/** The kernel removes the tun device of an ended wireguard-go right after the process is gone. */
const INTERFACE_GONE_WAIT_MS = 5_000;

/**
 * The node's single WireGuard interface: created when missing (kernel module first when allowed,
 * else wireguard-go), configured from the portal's server configuration, removed at shut-down
 * when the agent created it.
 */
export class WireGuardInterface {
  readonly name: string;
  readonly origin: InterfaceOrigin;
  readonly #runner: CommandRunner;
  readonly #wg: WgTool;
  readonly #logger: Logger;
  readonly #onPeersLost: () => void;
  #wireguardGo: WireGuardGoProcess | null = null;
  #applied: WireGuardAssignment | null = null;
  /** Configuration steps run one at a time (refresh and crash recovery may overlap). */
  #serial: Promise<unknown> = Promise.resolve();

  private constructor(name: string, origin: InterfaceOrigin, options: OpenInterfaceOptions) {
    this.name = name;
    this.origin = origin;
    this.#runner = options.runner;
    this.#wg = options.wg;
    this.#logger = options.logger;
    this.#onPeersLost = options.onPeersLost ?? (() => {});
  }

  static async open(options: OpenInterfaceOptions): Promise<WireGuardInterface> {
    const { name, implementation, pidFile, runner, wg, logger } = options;
    await WireGuardInterface.endLeftover(options);

    if (await linkExists(runner, name)) {
      if (!(await wg.isReachable(name))) throw new Error(`interface ${name} exists but is not a WireGuard interface`);
      logger.info({ interface: name }, 'using the existing WireGuard interface');
      return new WireGuardInterface(name, 'existing', options);
    }

    if (implementation !== 'wireguard-go') {
      const added = await runner.run('ip', ['link', 'add', 'dev', name, 'type', 'wireguard']);
      if (added.exitCode === 0) {
        logger.info(
          { interface: name, implementation: 'kernel' },
          'created WireGuard interface with the kernel module',
        );
        return new WireGuardInterface(name, 'kernel', options);
      }
      const reason = added.stderr.trim();
      if (implementation === 'kernel') throw new Error(`cannot create kernel WireGuard interface ${name}: ${reason}`);
      logger.info({ interface: name, reason }, 'kernel WireGuard is not available; falling back to wireguard-go');
    }

    const wireGuardInterface = new WireGuardInterface(name, 'wireguard-go', options);
    const wireguardGo = new WireGuardGoProcess({
      interfaceName: name,
      pidFile,
      runner,
      wg,
      logger,
      onRestarted: () => wireGuardInterface.#reapplyAfterRestart(),
    });
    await wireguardGo.start();
    wireGuardInterface.#wireguardGo = wireguardGo;
    logger.info(
      { interface: name, implementation: 'wireguard-go', pid: wireguardGo.pid },
      'created WireGuard interface with wireguard-go',
    );
    return wireGuardInterface;
  }

  /**
   * Ends the wireguard-go an agent killed with SIGKILL left serving the interface, which nothing
   * would supervise or take away (its pid record says which); it removes its interface with it.
   */
  static async endLeftover(
    options: Pick<OpenInterfaceOptions, 'name' | 'pidFile' | 'runner' | 'logger'>,
  ): Promise<void> {
    const { name, pidFile, runner, logger } = options;
    if ((await endRecordedProcess(pidFile, WIREGUARD_GO_GRACE_MS, logger)) === null) return;
    const deadline = deadlineIn(INTERFACE_GONE_WAIT_MS);
    while ((await linkExists(runner, name)) && !deadline.passed()) await sleep(50);
  }

  /**
   * Brings the interface to the given configuration, touching only what differs: an unchanged
   * key and port are not set again, so peers and their sessions survive every refresh.
   */
  apply(config: WireGuardAssignment): Promise<void> {
    return this.#inSerial(() => this.#apply(config));
  }

  /** Removes the interface if the agent created it; an existing one is left as it was found. */
  async close(): Promise<void> {
    await this.#serial.catch(() => undefined);
    if (this.origin === 'existing') return;
    if (this.#wireguardGo !== null) await this.#wireguardGo.stop();
    if (await linkExists(this.#runner, this.name)) {
      await runChecked(this.#runner, 'ip', ['link', 'del', 'dev', this.name]);
    }
    this.#logger.info({ interface: this.name }, 'removed WireGuard interface');
  }

  async #apply(config: WireGuardAssignment): Promise<void> {
    const current = (await this.#wg.dump(this.name)).interface;
    const keyChanged = current.privateKey?.reveal() !== config.privateKey.reveal();
    if (keyChanged) {
      await this.#wg.setPrivateKeyAndListenPort(this.name, config.privateKey, config.listenPort);
    } else if (current.listenPort !== config.listenPort) {
      await this.#wg.setListenPort(this.name, config.listenPort);
    }

    const link = await readLinkState(this.#runner, this.name);
    const wanted = config.addressList.map((cidr) => cidr.text);
    const added = wanted.filter((address) => !link.globalAddresses.includes(address));
    const removed = link.globalAddresses.filter((address) => !wanted.includes(address));
    // Add before removing, so a changed prefix never leaves the interface without an address.
    for (const address of added)
      await runChecked(this.#runner, 'ip', ['address', 'replace', address, 'dev', this.name]);
    for (const address of removed) await runChecked(this.#runner, 'ip', ['address', 'del', address, 'dev', this.name]);

    const mtu = config.mtu ?? DEFAULT_MTU;
    if (link.mtu !== mtu) await runChecked(this.#runner, 'ip', ['link', 'set', 'dev', this.name, 'mtu', String(mtu)]);
    if (!link.up) await runChecked(this.#runner, 'ip', ['link', 'set', 'dev', this.name, 'up']);

    const previous = this.#applied;
    this.#applied = config;
    const changes = {
      interface: this.name,
      keyChanged: previous !== null && keyChanged,
      listenPort: config.listenPort,
      addressesAdded: added,
      addressesRemoved: removed,
      mtu,
    };
    if (
      previous === null ||
      keyChanged ||
      added.length > 0 ||
      removed.length > 0 ||
      link.mtu !== mtu ||
      current.listenPort !== config.listenPort
    ) {
      this.#logger.info(changes, previous === null ? 'configured WireGuard interface' : 'updated WireGuard interface');
    }
  }

  async #reapplyAfterRestart(): Promise<void> {
    const config = this.#applied;
    if (config === null) return;
    await this.apply(config);
    this.#logger.warn(
      { interface: this.name },
      'WireGuard interface recreated without peers; the portal restores them',
    );
    this.#onPeersLost();
  }

  #inSerial<T>(step: () => Promise<T>): Promise<T> {
    const next = this.#serial.catch(() => undefined).then(step);
    this.#serial = next;
    return next;
  }
}
