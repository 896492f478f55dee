// Keeps the node's WireGuard interface in step with the portal and serves the vpn-daemon's
// WireGuard calls: the interface is set up on the first server configuration with a WireGuard
// part; add_peer and remove_peer go through the revisions (an outdated instruction changes
// nothing), the batcher (many calls, few writes) and the endpoint memory (devices greeted again
// after the interface came up empty).
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { WireGuardKey } from '../../shared/ids.js';
import type { Clock } from '../../shared/time.js';
import type { NodeAgentConfig } from '../config.js';
import { WireGuardUnavailableError, type WireGuardPeers } from '../daemon-api/server.js';
import type { CommandRunner } from '../process/command-runner.js';
import type { WireGuardAssignment } from '../node-assignment.js';
import { PeerBatcher } from './batcher.js';
import type { ListedPeer, WgPeer } from './dump.js';
import { EndpointMemory } from './endpoint-memory.js';
import { WireGuardInterface } from './interface.js';
import { EXPENSIVE_READ_MS, PeerView } from './peer-view.js';
import { OnlineRuns } from './online-runs.js';
import { PeerWriter, type PeerWriteMethod } from './peer-writer.js';
import { AwakeClock } from '../../shared/awake-clock.js';
import { PeerRevisions } from './revisions.js';
import { RemovalFile } from './removal-file.js';
import { WgTool } from './wg-tool.js';

export interface WireGuardServiceOptions {
  readonly settings: NodeAgentConfig['wireGuard'];
  readonly nodeNumber: number;
  /** Starts `ip`, `wg` and `wireguard-go`; tests run them in a network namespace. */
  readonly runner: CommandRunner;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The interface lost its peers (wireguard-go restarted): the portal should look at the node again. */
  readonly onPeersLost: () => void;
  /** The WireGuard-over-TCP client behind one of the relay's UDP sockets; null for any other endpoint. */
  readonly originOf: (endpoint: string) => string | null;
}

/** How often the service looks at its peers' endpoints by itself… */
const ENDPOINT_OBSERVE_INTERVAL_MS = 10_000;
/**
 * …but when a look is expensive (thousands of peers: wireguard-go holds its configuration lock
 * while it writes the listing out, and every peer change waits for it), it waits for a moment
 * without peer changes, so a bulk revocation or a reconcile burst is not held up by it…
 */
const ENDPOINT_OBSERVE_QUIET_MS = 1_000;
/** …for at most this long since the last look (the memory keeps handshakes of the last 3 minutes). */
const ENDPOINT_OBSERVE_LATEST_MS = 30_000;
/** How often the service checks whether a look is due. */
const ENDPOINT_OBSERVE_CHECK_MS = 1_000;

/** Whether the service's own look at its peers' endpoints is due (times in milliseconds, monotonic). */
export function endpointLookDue(at: {
  readonly nowMs: number;
  readonly lastLookMs: number;
  readonly lastReadDurationMs: number;
  /** The last moment a peer change waited or was written. */
  readonly lastPeerChangeMs: number;
}): boolean {
  const sinceLook = at.nowMs - at.lastLookMs;
  if (sinceLook < ENDPOINT_OBSERVE_INTERVAL_MS) return false;
  if (at.lastReadDurationMs < EXPENSIVE_READ_MS) return true;
  return at.nowMs - at.lastPeerChangeMs >= ENDPOINT_OBSERVE_QUIET_MS || sinceLook >= ENDPOINT_OBSERVE_LATEST_MS;
}

interface ActiveWireGuard {
  readonly wireGuardInterface: WireGuardInterface;
  readonly batcher: PeerBatcher;
  readonly peers: PeerView;
}

export class WireGuardService implements WireGuardPeers {
  readonly #options: WireGuardServiceOptions;
  readonly #wg: WgTool;
  readonly #writer: PeerWriter;
  /** Removals are remembered for ten minutes of the agent running, not of the clock on the wall. */
  readonly #awake = new AwakeClock();
  readonly #revisions = new PeerRevisions(() => this.#awake.now());
  readonly #removals: RemovalFile;
  readonly #endpoints: EndpointMemory;
  readonly #onlineRuns = new OnlineRuns();
  /** Set up on the first server configuration that has a WireGuard part. */
  #active: ActiveWireGuard | null = null;
  #warnedAboutDropped = false;
  /** Keeps the endpoint memory current even when nobody lists the peers. */
  #observeTimer: NodeJS.Timeout | null = null;
  /** When the peers were last listed, by anyone (performance.now()). */
  #lastLookMs = performance.now();

  private constructor(options: WireGuardServiceOptions) {
    this.#options = options;
    this.#wg = new WgTool(options.runner);
    this.#writer = new PeerWriter({ wg: this.#wg });
    this.#endpoints = new EndpointMemory(options.settings.endpointFile, options.logger);
    this.#removals = new RemovalFile(options.settings.removalFile, options.logger, this.#revisions);
    this.#awake.start();
  }

  /** A service with no interface yet, remembering the endpoints and the removals the previous run kept. */
  static async create(options: WireGuardServiceOptions): Promise<WireGuardService> {
    const service = new WireGuardService(options);
    // At start, also when the portal no longer assigns WireGuard to this node.
    await WireGuardInterface.endLeftover({
      name: options.settings.interfaceName,
      pidFile: wireGuardGoPidFile(options.settings),
      runner: options.runner,
      logger: options.logger,
    });
    await service.#endpoints.load();
    const removals = await service.#removals.load();
    service.#revisions.restore(removals);
    await service.#removals.rewrite();
    if (removals.length > 0)
      options.logger.info(
        { removals: removals.length },
        'removals of the last ten minutes remembered from before the restart',
      );
    return service;
  }

  /** Null while the portal assigns no WireGuard profile to this node. */
  get wireGuardInterface(): WireGuardInterface | null {
    return this.#active?.wireGuardInterface ?? null;
  }

  /** `max_revision` of `/i/node`: the newest instruction applied. */
  get highestRevision(): number {
    return this.#revisions.highest;
  }

  /**
   * Brings the interface to the portal's WireGuard settings, creating it on the first ones. Null
   * (the portal no longer assigns WireGuard here) leaves an interface as it is, with a warning.
   */
  async apply(settings: WireGuardAssignment | null): Promise<void> {
    const { logger } = this.#options;
    if (settings === null) {
      if (this.#active === null) logger.info('the portal assigns no WireGuard profile to this node');
      else if (!this.#warnedAboutDropped) {
        this.#warnedAboutDropped = true;
        logger.warn(
          { interface: this.#active.wireGuardInterface.name },
          'the portal no longer assigns WireGuard profiles to this node; the interface stays as it is',
        );
      }
      return;
    }
    this.#active ??= await this.#open();
    this.#warnedAboutDropped = false;
    checkPeerCapacity(this.#active.wireGuardInterface, settings, this.#options.nodeNumber);
    await this.#active.wireGuardInterface.apply(settings);
  }

  async list(): Promise<readonly ListedPeer[]> {
    const listed = await this.#look();
    return listed.map((peer) => ({
      publicKey: peer.publicKey,
      allowedIps: peer.allowedIps,
      // A WireGuard-over-TCP client shows as the relay's own UDP socket: name the client instead.
      endpoint: peer.endpoint === null ? null : (this.#options.originOf(peer.endpoint) ?? peer.endpoint),
      latestHandshake: peer.latestHandshake,
      bytesReceived: peer.bytesReceived,
      bytesSent: peer.bytesSent,
      onlineSince: this.#onlineRuns.since(peer.publicKey),
    }));
  }

  /** Reads the peers, and notes what the endpoint memory and the handshake runs keep of them. */
  async #look(): Promise<readonly WgPeer[]> {
    if (this.#active === null) return [];
    this.#lastLookMs = performance.now();
    const { peers } = await this.#active.peers.read();
    this.#endpoints.observe(peers, this.#options.clock.now());
    this.#onlineRuns.observe(peers, performance.now(), Date.now());
    return peers;
  }

  async add(publicKey: WireGuardKey, allowedIps: readonly string[], revision: number | null): Promise<void> {
    const { batcher } = this.#require();
    if (!this.#revisions.admit(publicKey, 'add', revision)) {
      this.#options.logger.debug(
        { publicKey, revision },
        'ignored an add_peer older than the last instruction for this peer',
      );
      return;
    }
    const endpoint = this.#endpoints.takeHint(publicKey);
    await batcher.add(publicKey, allowedIps, endpoint ?? undefined);
    if (endpoint !== null) this.#endpoints.greet(allowedIps);
  }

  async remove(publicKey: WireGuardKey, revision: number | null): Promise<WgPeer | null> {
    const { batcher } = this.#require();
    if (!this.#revisions.admit(publicKey, 'remove', revision)) {
      this.#options.logger.debug(
        { publicKey, revision },
        'ignored a remove_peer older than the last instruction for this peer',
      );
      return null;
    }
    this.#endpoints.forget(publicKey);
    this.#onlineRuns.forget(publicKey);
    // Answered only once the removal is on disk too: a restart cannot forget what was confirmed.
    const [removed] = await Promise.all([
      batcher.remove(publicKey),
      revision === null ? Promise.resolve() : this.#removals.record(publicKey, revision),
    ]);
    return removed;
  }

  /** How many peers the interface holds, for `/i/node`, without reading them all when the agent knows (peer-view.ts). */
  async peerCount(): Promise<number> {
    if (this.#active === null) return 0;
    return this.#active.peers.count ?? (await this.#active.peers.read()).peers.length;
  }

  /** The interface and its peers as they are, for metrics (the endpoint memory is not told); null without an interface. */
  async dump(): Promise<{ readonly name: string; readonly peers: readonly WgPeer[] } | null> {
    if (this.#active === null) return null;
    return { name: this.#active.wireGuardInterface.name, peers: (await this.#active.peers.read()).peers };
  }

  /** Writes of peer changes to the interface since start, by method, for metrics; null without an interface. */
  peerWrites(): { readonly name: string; readonly writes: Readonly<Record<PeerWriteMethod, number>> } | null {
    return this.#active === null ? null : { name: this.#active.wireGuardInterface.name, writes: this.#writer.writes };
  }

  /** Waits for pending peer changes, removes the interface if the agent made it, keeps the endpoints. */
  async close(): Promise<void> {
    if (this.#observeTimer !== null) clearInterval(this.#observeTimer);
    this.#awake.stop();
    if (this.#active !== null) {
      await this.#active.batcher.drain();
      await this.#active.wireGuardInterface.close();
    }
    await this.#endpoints.flush();
  }

  async #open(): Promise<ActiveWireGuard> {
    const { settings, runner, logger } = this.#options;
    const wireGuardInterface = await WireGuardInterface.open({
      name: settings.interfaceName,
      implementation: settings.implementation,
      pidFile: wireGuardGoPidFile(settings),
      runner,
      wg: this.#wg,
      logger,
      onPeersLost: () => {
        this.#active?.peers.forget();
        this.#endpoints.interfaceEmptied();
        this.#options.onPeersLost();
      },
    });
    if (wireGuardInterface.origin !== 'existing') this.#endpoints.interfaceEmptied();
    const peers = new PeerView({ interfaceName: wireGuardInterface.name, wg: this.#wg, writes: this.#writer });
    const batcher = new PeerBatcher({ interfaceName: wireGuardInterface.name, peers, writer: this.#writer, logger });
    this.#lastLookMs = performance.now();
    this.#observeTimer = setInterval(() => {
      const due = endpointLookDue({
        nowMs: performance.now(),
        lastLookMs: this.#lastLookMs,
        lastReadDurationMs: peers.lastReadDurationMs,
        lastPeerChangeMs: batcher.busyAtMs,
      });
      if (due) void this.#look().catch(() => undefined);
    }, ENDPOINT_OBSERVE_CHECK_MS);
    return { wireGuardInterface, peers, batcher };
  }

  #require(): ActiveWireGuard {
    if (this.#active === null) throw new WireGuardUnavailableError();
    return this.#active;
  }
}

/** Peers one wireguard-go interface holds (the kernel's limit, 1,048,576, the portal checks). */
const WIREGUARD_GO_PEER_LIMIT = 65_536;

/** wireguard-go cannot hold more than 65,536 peers: refuse ranges that could need more, naming them. */
function checkPeerCapacity(
  wireGuardInterface: WireGuardInterface,
  settings: WireGuardAssignment,
  nodeNumber: number,
): void {
  if (wireGuardInterface.origin !== 'wireguard-go') return;
  const total = settings.capacity.reduce((sum, entry) => sum + entry.peers, 0);
  if (total <= WIREGUARD_GO_PEER_LIMIT) return;
  const profiles = settings.capacity.map((entry) => `${entry.profileId} (${entry.peers})`).join(', ');
  throw new Error(
    `the WireGuard ranges of node ${nodeNumber} hold ${total} clients (${profiles}), more than wireguard-go holds (${WIREGUARD_GO_PEER_LIMIT}): use smaller ranges in the portal's profiles, or kernel WireGuard`,
  );
}

/** `wireguard-go.IFNAME.pid` in the folder of the endpoint memory (0700): the agent's wireguard-go. */
export function wireGuardGoPidFile(
  settings: Pick<NodeAgentConfig['wireGuard'], 'endpointFile' | 'interfaceName'>,
): string {
  return join(dirname(settings.endpointFile), `wireguard-go.${settings.interfaceName}.pid`);
}
