// The node agent's start-up and wiring: fetch the server configuration from the portal, set up
// WireGuard, OpenVPN and ProxyGuard from it, serve the vpn-daemon protocol, refresh periodically.
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../shared/time.js';
import { resolvePreferAes } from './openvpn/aes-support.js';
import { DEFAULT_BACKOFF, retryWithBackoff, type BackoffSchedule } from './process/backoff.js';
import { createCommandRunner, type CommandRunner } from './process/command-runner.js';
import type { NodeAgentConfig } from './config.js';
import { buildDaemonServer, WireGuardUnavailableError, type DaemonServer, type WireGuardPeers } from './daemon-api/server.js';
import { describeNode } from './daemon-api/node-info.js';
import { OpenVpnService } from './openvpn/service.js';
import { PeerBatcher } from './wireguard/batcher.js';
import { PeerWriter } from './wireguard/peer-writer.js';
import { PortalClient } from './portal-client.js';
import type { ProxyGuardRelay } from './proxyguard/relay.js';
import { ProxyGuardService } from './proxyguard/service.js';
import type { Secret } from '../shared/secret.js';
import type { NodeServerConfig, WireGuardServerConfig } from './server-config.js';
import { WgTool } from './wireguard/wg-tool.js';
import { WireGuardInterface } from './wireguard/interface.js';
import { messageOf } from '../shared/error-message.js';
import { LISTEN_BACKLOG } from '../shared/listen-backlog.js';
import { PeerRevisions } from './wireguard/revisions.js';
import { EndpointMemory } from './wireguard/endpoint-memory.js';
import { randomUUID } from 'node:crypto';
import { startMetricsServer, type RunningMetricsServer } from '../shared/metrics-server.js';
import { agentMetricsRegistry } from './metrics.js';
import { clientRanges, NodeNat } from './nat.js';

export interface NodeAgentDependencies {
  readonly config: NodeAgentConfig;
  readonly nodeKey: Secret;
  readonly logger: Logger;
  readonly version: string;
  readonly clock?: Clock;
  /** Starts `ip`, `wg`, `wireguard-go` and `openvpn`; tests run them in a network namespace. */
  readonly runner?: CommandRunner;
  readonly fetch?: typeof fetch;
  /** Pauses between attempts to reach the portal at start. */
  readonly portalRetry?: BackoffSchedule;
  /** Pauses before restarting an OpenVPN process that died (default 1 s, 2 s, 5 s, 10 s, 30 s). */
  readonly openVpnRestartDelaysMs?: readonly number[];
}

export interface RunningNodeAgent {
  /** Where the vpn-daemon protocol is served (resolves port 0 to the real port). */
  readonly daemonUrl: URL;
  /** Null while the portal assigns no WireGuard profile to this node. */
  readonly wireGuardInterface: WireGuardInterface | null;
  /** The ProxyGuard relay; null while the portal does not enable WireGuard over TCP. */
  readonly proxyGuardRelay: ProxyGuardRelay | null;
  /** The OpenVPN server processes (none while the portal assigns no OpenVPN profile). */
  readonly openVpn: OpenVpnService;
  /** `http://HOST:PORT/metrics`; null when `metrics.listen` is null. */
  readonly metricsUrl: string | null;
  /** Fetches the server configuration now and applies it (the timer does this every interval). */
  refresh(): Promise<void>;
  /** Enters or leaves maintenance (the portal stops or resumes putting new configurations here). */
  setMaintenanceMode(on: boolean): void;
  /** Stops serving, waits for pending peer changes, removes the interface if the agent made it. */
  stop(): Promise<void>;
}

/** How often the agent looks at its peers' endpoints by itself. */
const ENDPOINT_OBSERVE_INTERVAL_MS = 10_000;

interface ActiveWireGuard {
  readonly wireGuardInterface: WireGuardInterface;
  readonly batcher: PeerBatcher;
}

interface AgentState {
  /** Set up on the first server configuration that has a WireGuard part. */
  wireGuard: ActiveWireGuard | null;
  warnedAboutDroppedWireGuard: boolean;
  /** `instance_id` of `/i/node`: new whenever the interface lost its peers. */
  instanceId: string;
  /** `maintenance_mode` of `/i/node`. */
  maintenanceMode: boolean;
}

/**
 * Starts the node agent: waits until the portal hands out this node's server configuration,
 * sets up WireGuard from it, then serves the vpn-daemon protocol and refreshes the
 * configuration periodically. Aborting `signal` during start-up undoes what was set up.
 */
export async function startNodeAgent(deps: NodeAgentDependencies, signal?: AbortSignal): Promise<RunningNodeAgent> {
  const { config, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const runner = deps.runner ?? createCommandRunner();
  const wg = new WgTool(runner);
  const writer = new PeerWriter({ wg });
  const preferAes = await resolvePreferAes(config.openVpn.preferAes);
  const portal = new PortalClient({
    apiUrl: config.apiUrl,
    nodeNumber: config.nodeNumber,
    nodeKey: deps.nodeKey,
    profileIdList: config.profileIdList,
    openVpn: { user: config.openVpn.user, group: config.openVpn.group, preferAes, managementDir: config.openVpn.managementDir },
    ...(deps.fetch === undefined ? {} : { fetch: deps.fetch }),
  });
  const openVpn = new OpenVpnService({
    settings: config.openVpn,
    runner,
    portal,
    logger,
    ...(deps.openVpnRestartDelaysMs === undefined ? {} : { restartDelaysMs: deps.openVpnRestartDelaysMs }),
  });

  const state: AgentState = { wireGuard: null, warnedAboutDroppedWireGuard: false, instanceId: randomUUID(), maintenanceMode: config.maintenanceMode };
  const revisions = new PeerRevisions();
  const endpoints = new EndpointMemory(config.wireGuard.endpointFile, logger);
  await endpoints.load();
  // Set once serving: asks the portal again, which then looks at this node and reconciles it.
  let checkIn: () => void = () => {};
  const proxyGuard = new ProxyGuardService(config.proxyGuard, logger);
  const nat = config.nat ? new NodeNat(runner, logger) : null;

  const applyServerConfig = async (serverConfig: NodeServerConfig): Promise<void> => {
    // OpenVPN first: a WireGuard problem must not keep the OpenVPN servers from their files.
    await openVpn.apply(serverConfig.openvpn ?? []);
    await nat?.apply(clientRanges(serverConfig));
    if (serverConfig.wireguard === null) {
      if (state.wireGuard === null) logger.info('the portal assigns no WireGuard profile to this node');
      else if (!state.warnedAboutDroppedWireGuard) {
        state.warnedAboutDroppedWireGuard = true;
        logger.warn(
          { interface: state.wireGuard.wireGuardInterface.name },
          'the portal no longer assigns WireGuard profiles to this node; the interface stays as it is',
        );
      }
      return;
    }
    if (state.wireGuard === null) {
      const wireGuardInterface = await WireGuardInterface.open({
        name: config.wireGuard.interfaceName,
        implementation: config.wireGuard.implementation,
        runner,
        wg,
        logger,
        onPeersLost: () => {
          state.instanceId = randomUUID();
          endpoints.interfaceEmptied();
          checkIn();
        },
      });
      if (wireGuardInterface.origin !== 'existing') endpoints.interfaceEmptied();
      state.wireGuard = { wireGuardInterface, batcher: new PeerBatcher({ interfaceName: wireGuardInterface.name, wg, writer, logger }) };
    }
    state.warnedAboutDroppedWireGuard = false;
    checkPeerCapacity(state.wireGuard.wireGuardInterface, serverConfig.wireguard, config.nodeNumber);
    await state.wireGuard.wireGuardInterface.apply(serverConfig.wireguard);
    await proxyGuard.apply(serverConfig.wireguard.proxyGuard, serverConfig.wireguard.listenPort);
  };

  const requireWireGuard = (): ActiveWireGuard => {
    if (state.wireGuard === null) throw new WireGuardUnavailableError();
    return state.wireGuard;
  };
  const peers: WireGuardPeers = {
    list: async () => {
      if (state.wireGuard === null) return [];
      const { peers: listed } = await wg.dump(state.wireGuard.wireGuardInterface.name);
      endpoints.observe(listed, clock.now());
      // A WireGuard-over-TCP client shows as the relay's own UDP socket: name the client instead.
      const relay = proxyGuard.relay;
      if (relay === null) return listed;
      return listed.map((peer) => (peer.endpoint === null ? peer : { ...peer, endpoint: relay.originOf(peer.endpoint) ?? peer.endpoint }));
    },
    add: async (publicKey, allowedIps, revision) => {
      const { batcher } = requireWireGuard();
      if (!revisions.admit(publicKey, 'add', revision)) {
        logger.debug({ publicKey, revision }, 'ignored an add_peer older than the last instruction for this peer');
        return;
      }
      const endpoint = endpoints.takeHint(publicKey);
      await batcher.add(publicKey, allowedIps, endpoint ?? undefined);
      if (endpoint !== null) endpoints.greet(allowedIps);
    },
    remove: async (publicKey, revision) => {
      const { batcher } = requireWireGuard();
      if (!revisions.admit(publicKey, 'remove', revision)) {
        logger.debug({ publicKey, revision }, 'ignored a remove_peer older than the last instruction for this peer');
        return null;
      }
      endpoints.forget(publicKey);
      return batcher.remove(publicKey);
    },
  };

  let server: DaemonServer | null = null;
  let metricsServer: RunningMetricsServer | null = null;
  try {
    logger.info(
      {
        apiUrl: `${config.apiUrl.origin}${config.apiUrl.pathname}`,
        nodeNumber: config.nodeNumber,
        profileIdList: config.profileIdList,
        openVpnPreferAes: preferAes,
      },
      'fetching the server configuration from the portal',
    );
    const first = await retryWithBackoff(
      () => portal.fetchServerConfig(),
      (error, attempt, retryInMs) => logger.warn({ attempt, retryInMs, reason: messageOf(error) }, 'cannot get the server configuration from the portal yet'),
      deps.portalRetry ?? DEFAULT_BACKOFF,
      signal,
    );
    await applyServerConfig(first);
    signal?.throwIfAborted();

    server = buildDaemonServer({
      nodeKey: deps.nodeKey,
      peers,
      clock,
      logger,
      openVpn,
      nodeInfo: async () =>
        describeNode(
          { wireGuardPeers: (await peers.list()).length, openVpnClients: openVpn.connectedCount, openVpnProcesses: openVpn.processCount },
          deps.version,
          { instanceId: state.instanceId, maxRevision: revisions.highest, maintenanceMode: state.maintenanceMode },
        ),
    });
    await server.listen({ host: config.listen.host, port: config.listen.port, backlog: LISTEN_BACKLOG });
    signal?.throwIfAborted();
    if (config.metrics !== null) {
      const registry = agentMetricsRegistry({
        clock,
        wireGuard: async () => {
          if (state.wireGuard === null) return null;
          const name = state.wireGuard.wireGuardInterface.name;
          return { name, peers: (await wg.dump(name)).peers };
        },
        peerWrites: () => (state.wireGuard === null ? null : { name: state.wireGuard.wireGuardInterface.name, writes: writer.writes }),
        openVpn: () => openVpn.devices(),
        proxyGuardTunnels: () => proxyGuard.relay?.tunnelCount ?? null,
      });
      // Ready once the vpn-daemon protocol is served, which is when this starts.
      metricsServer = await startMetricsServer({ ...config.metrics, registry, notReady: async () => null });
      logger.info(`metrics at ${metricsServer.url}`);
    }
  } catch (error) {
    await metricsServer?.close();
    await server?.close();
    await openVpn.close();
    await nat?.remove();
    await proxyGuard.close();
    await state.wireGuard?.wireGuardInterface.close();
    throw error;
  }

  const daemonUrl = urlOf(server.server.address());
  logger.info({ url: daemonUrl.href }, 'serving the vpn-daemon protocol');

  let refreshing: Promise<void> | null = null;
  const refresh = (): Promise<void> => {
    refreshing ??= portal
      .fetchServerConfig()
      .then(applyServerConfig)
      .catch((error: unknown) => {
        logger.warn({ reason: messageOf(error) }, 'refreshing the server configuration failed; keeping the current one');
      })
      .finally(() => {
        refreshing = null;
      });
    return refreshing;
  };
  const refreshTimer = setInterval(() => void refresh(), config.refreshIntervalMs);
  // Keeps the endpoint memory current even when nobody lists the peers.
  const observeTimer = setInterval(() => void peers.list().catch(() => undefined), ENDPOINT_OBSERVE_INTERVAL_MS);
  // The first request reached the portal before anything here listened; now the portal can
  // look at this node (a new instance_id) and give it its peers at once.
  checkIn = () => void refresh();
  checkIn();

  const runningServer = server;
  return {
    daemonUrl,
    metricsUrl: metricsServer?.url ?? null,
    get wireGuardInterface() {
      return state.wireGuard?.wireGuardInterface ?? null;
    },
    get proxyGuardRelay() {
      return proxyGuard.relay;
    },
    openVpn,
    refresh,
    setMaintenanceMode(on) {
      if (state.maintenanceMode === on) return;
      state.maintenanceMode = on;
      logger.info({ maintenanceMode: on }, on ? 'maintenance mode on: the portal puts no new configuration here' : 'maintenance mode off');
    },
    async stop() {
      clearInterval(refreshTimer);
      clearInterval(observeTimer);
      await refreshing;
      await metricsServer?.close();
      await runningServer.close();
      await openVpn.close();
      await nat?.remove();
      await proxyGuard.close();
      if (state.wireGuard !== null) {
        await state.wireGuard.batcher.drain();
        await state.wireGuard.wireGuardInterface.close();
      }
      await endpoints.flush();
      logger.info('node agent stopped');
    },
  };
}

function urlOf(address: AddressInfo | string | null): URL {
  if (address === null || typeof address === 'string') throw new Error(`unexpected listening address ${String(address)}`);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return new URL(`http://${host}:${address.port}`);
}

/** Peers one wireguard-go interface holds (the kernel's limit, 1,048,576, the portal checks). */
const WIREGUARD_GO_PEER_LIMIT = 65_536;

/** wireguard-go cannot hold more than 65,536 peers: refuse ranges that could need more, naming them. */
function checkPeerCapacity(wireGuardInterface: WireGuardInterface, settings: WireGuardServerConfig, nodeNumber: number): void {
  if (wireGuardInterface.origin !== 'wireguard-go') return;
  const total = settings.capacity.reduce((sum, entry) => sum + entry.peers, 0);
  if (total <= WIREGUARD_GO_PEER_LIMIT) return;
  const profiles = settings.capacity.map((entry) => `${entry.profileId} (${entry.peers})`).join(', ');
  throw new Error(
    `the WireGuard ranges of node ${nodeNumber} hold ${total} clients (${profiles}), more than wireguard-go holds (${WIREGUARD_GO_PEER_LIMIT}): use smaller ranges in the portal's profiles, or kernel WireGuard`,
  );
}
