// Keeps the ProxyGuard relay in step with the portal: started when a server configuration
// enables WireGuard over TCP, told about changed host names and WireGuard port, stopped when
// the portal disables it again. The node agent feeds it every server configuration.
import type { Logger } from 'pino';
import type { ProxyGuardSettings } from '../config.js';
import { ProxyGuardRelay } from './relay.js';
import type { ProxyGuardAssignment } from '../node-assignment.js';

/** The relay and WireGuard share the host; loopback keeps the relayed datagrams off the wire. */
const RELAY_TARGET_HOST = '127.0.0.1';

export class ProxyGuardService {
  readonly #settings: ProxyGuardSettings;
  readonly #logger: Logger;
  #relay: ProxyGuardRelay | null = null;
  /** WireGuard's UDP port: where each new tunnel sends its datagrams. */
  #wireGuardPort = 0;

  constructor(settings: ProxyGuardSettings, logger: Logger) {
    this.#settings = settings;
    this.#logger = logger;
  }

  /** The running relay; null while the portal does not enable WireGuard over TCP. */
  get relay(): ProxyGuardRelay | null {
    return this.#relay;
  }

  async apply(assignment: ProxyGuardAssignment | null, wireGuardPort: number): Promise<void> {
    this.#wireGuardPort = wireGuardPort;
    if (assignment === null) {
      if (this.#relay === null) return;
      await this.close();
      this.#logger.info('the portal no longer enables WireGuard over TCP; the ProxyGuard relay stopped');
      return;
    }
    if (this.#relay !== null) {
      this.#relay.setHostNames(assignment.hostNames);
      return;
    }
    this.#relay = await ProxyGuardRelay.start({
      listen: this.#settings.listen,
      target: () => ({ host: RELAY_TARGET_HOST, port: this.#wireGuardPort }),
      hostNames: assignment.hostNames,
      maxTunnels: this.#settings.maxTunnels,
      idleTimeoutMs: this.#settings.idleTimeoutMs,
      maxPendingRequests: this.#settings.maxPendingRequests,
      requestTimeoutMs: this.#settings.requestTimeoutMs,
      trustedProxyList: this.#settings.trustedProxyList,
      logger: this.#logger,
    });
    const { address, port } = this.#relay.address;
    this.#logger.info(
      { host: address, port, hostNames: assignment.hostNames, maxTunnels: this.#settings.maxTunnels },
      'serving ProxyGuard (WireGuard over TCP)',
    );
  }

  /** Stops the relay (its tunnels are closed); nothing when none runs. */
  async close(): Promise<void> {
    const relay = this.#relay;
    this.#relay = null;
    await relay?.close();
  }
}
