// The node agent's start-up and wiring: fetch the server configuration from the portal, set up
// WireGuard, OpenVPN and ProxyGuard from it, serve the vpn-daemon protocol, refresh periodically.
import { createServer, type AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../shared/time.js';
import { resolvePreferAes } from './openvpn/aes-support.js';
import { DEFAULT_BACKOFF, retryWithBackoff, type BackoffSchedule } from './process/backoff.js';
import { createCommandRunner, type CommandRunner } from './process/command-runner.js';
import type { NodeAgentConfig } from './config.js';
import { buildDaemonServer, type DaemonServer } from './daemon-api/server.js';
import { describeNode } from './daemon-api/node-info.js';
import { OpenVpnService } from './openvpn/service.js';
import { PortalClient } from './portal-client.js';
import type { ProxyGuardRelay } from './proxyguard/relay.js';
import { ProxyGuardService } from './proxyguard/service.js';
import type { Secret } from '../shared/secret.js';
import type { NodeServerConfig } from './node-assignment.js';
import type { WireGuardInterface } from './wireguard/interface.js';
import { WireGuardService } from './wireguard/service.js';
import { messageOf } from '../shared/error-message.js';
import { LISTEN_BACKLOG } from '../shared/listen-backlog.js';
import { randomUUID } from 'node:crypto';
import { startMetricsServer, type RunningMetricsServer } from '../shared/metrics-server.js';
import { agentMetricsRegistry } from './node-metrics.js';
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

/**
 * Starts the node agent: waits until the portal hands out this node's server configuration,
 * sets up WireGuard from it, then serves the vpn-daemon protocol and refreshes the
 * configuration periodically. Aborting `signal` during start-up undoes what was set up.
 */
export async function startNodeAgent(deps: NodeAgentDependencies, signal?: AbortSignal): Promise<RunningNodeAgent> {
  const { config, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const runner = deps.runner ?? createCommandRunner();
  const preferAes = await resolvePreferAes(config.openVpn.preferAes);
  const portal = portalClientOf(deps, preferAes);
  const state: AgentState = { instanceId: randomUUID(), maintenanceMode: config.maintenanceMode, checkIn: () => {} };
  const services = await createServices(deps, runner, clock, portal, state);
  const { server, metricsServer } = await applyFirstConfigAndServe(
    deps,
    clock,
    portal,
    preferAes,
    services,
    state,
    signal,
  );

  const daemonUrl = urlOf(server.server.address());
  logger.info({ url: daemonUrl.href }, 'serving the vpn-daemon protocol');

  const refresher = serverConfigRefresher(portal, services.apply, logger);
  const { refresh } = refresher;
  const refreshTimer = setInterval(() => void refresh(), config.refreshIntervalMs);
  // The first request reached the portal before anything here listened; now the portal can
  // look at this node (a new instance_id) and give it its peers at once.
  state.checkIn = () => void refresh();
  state.checkIn();

  const { openVpn, proxyGuard, wireGuard } = services;
  return {
    daemonUrl,
    metricsUrl: metricsServer?.url ?? null,
    get wireGuardInterface() {
      return wireGuard.wireGuardInterface;
    },
    get proxyGuardRelay() {
      return proxyGuard.relay;
    },
    openVpn,
    refresh,
    setMaintenanceMode(on) {
      if (state.maintenanceMode !== on)
        logger.info({ maintenanceMode: on }, on ? MAINTENANCE_ON : 'maintenance mode off');
      state.maintenanceMode = on;
    },
    async stop() {
      clearInterval(refreshTimer);
      // A refresh asked for from now on (a check-in after a lost interface, a caller) would set up
      // again what is about to close: the NAT table, the relay, OpenVPN servers.
      await refresher.stop();
      await metricsServer?.close();
      await server.close();
      await services.close();
      logger.info('node agent stopped');
    },
  };
}

/** What the agent tells the portal about itself, which changes while it runs. */
interface AgentState {
  /** `instance_id` of `/i/node`: new whenever the interface lost its peers. */
  instanceId: string;
  maintenanceMode: boolean;
  /** Set once serving: asks the portal again, which then looks at this node and reconciles it. */
  checkIn: () => void;
}

/** OpenVPN, WireGuard, ProxyGuard and NAT, applied and closed together. */
interface NodeServices {
  readonly openVpn: OpenVpnService;
  readonly proxyGuard: ProxyGuardService;
  readonly wireGuard: WireGuardService;
  /** Null when node.json has no `nat`. */
  readonly nat: NodeNat | null;
  readonly apply: (serverConfig: NodeServerConfig) => Promise<void>;
  readonly close: () => Promise<void>;
}

/** Creates the services (the WireGuard interface among them); none serves until the first configuration. */
async function createServices(
  deps: NodeAgentDependencies,
  runner: CommandRunner,
  clock: Clock,
  portal: PortalClient,
  state: AgentState,
): Promise<NodeServices> {
  const { config, logger } = deps;
  const restartDelaysMs = deps.openVpnRestartDelaysMs;
  const openVpn = new OpenVpnService({ settings: config.openVpn, runner, portal, logger, restartDelaysMs });
  // What an agent killed with SIGKILL left running goes first, before the portal is even asked.
  await openVpn.endLeftovers();
  const proxyGuard = new ProxyGuardService(config.proxyGuard, logger);
  const wireGuard = await WireGuardService.create({
    settings: config.wireGuard,
    nodeNumber: config.nodeNumber,
    runner,
    clock,
    logger,
    onPeersLost: () => {
      state.instanceId = randomUUID();
      state.checkIn();
    },
    originOf: (endpoint) => proxyGuard.relay?.originOf(endpoint) ?? null,
  });
  const nat = config.nat === null ? null : new NodeNat(config.nat, runner, clock, logger);
  return {
    openVpn,
    proxyGuard,
    wireGuard,
    nat,
    apply: async (serverConfig) => {
      // OpenVPN first: a WireGuard problem must not keep the OpenVPN servers from their files.
      await openVpn.apply(serverConfig.openvpn ?? []);
      await nat?.apply(clientRanges(serverConfig));
      await wireGuard.apply(serverConfig.wireguard);
      if (serverConfig.wireguard !== null)
        await proxyGuard.apply(serverConfig.wireguard.proxyGuard, serverConfig.wireguard.listenPort);
    },
    close: async () => {
      await openVpn.close();
      await nat?.remove();
      await proxyGuard.close();
      await wireGuard.close();
    },
  };
}

/**
 * Applies the first server configuration, then serves the vpn-daemon protocol and /metrics;
 * on a failure or an abort, closes what was started and the services, and throws.
 */
async function applyFirstConfigAndServe(
  deps: NodeAgentDependencies,
  clock: Clock,
  portal: PortalClient,
  preferAes: boolean,
  services: NodeServices,
  state: AgentState,
  signal: AbortSignal | undefined,
): Promise<{ server: DaemonServer; metricsServer: RunningMetricsServer | null }> {
  const { config, logger } = deps;
  const { openVpn, proxyGuard, wireGuard } = services;
  let server: DaemonServer | null = null;
  let metricsServer: RunningMetricsServer | null = null;
  try {
    const release = await holdAddress(config.listen);
    try {
      await services.apply(await firstServerConfig(portal, deps, preferAes, signal));
      signal?.throwIfAborted();
    } finally {
      await release();
    }
    server = daemonServerOf(deps, clock, services, state);
    await server.listen({ host: config.listen.host, port: config.listen.port, backlog: LISTEN_BACKLOG });
    signal?.throwIfAborted();
    if (config.metrics !== null)
      metricsServer = await serveMetrics(
        config.metrics,
        { clock, wireGuard, openVpn, proxyGuard, nat: services.nat },
        logger,
      );
    return { server, metricsServer };
  } catch (error) {
    await metricsServer?.close();
    await server?.close();
    await services.close();
    throw error;
  }
}

/**
 * Holds the daemon's address and port until the first configuration is applied, closing each
 * connection at once, as if nothing listened: the request to the portal before it takes a local
 * port the kernel picks, and when it picked this one the listen after it failed (EADDRINUSE, and
 * the agent exited). Answers what lets the address go, just before the daemon listens on it.
 */
async function holdAddress(listen: { readonly host: string; readonly port: number }): Promise<() => Promise<void>> {
  // Port 0 is any port: there is nothing to hold.
  if (listen.port === 0) return async () => {};
  const holder = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    holder.once('error', reject);
    holder.listen({ host: listen.host, port: listen.port, backlog: LISTEN_BACKLOG }, () => {
      holder.off('error', reject);
      resolve();
    });
  });
  return () => new Promise<void>((resolve) => holder.close(() => resolve()));
}

/** The vpn-daemon protocol over the services, describing the node as `state` says. */
function daemonServerOf(
  deps: NodeAgentDependencies,
  clock: Clock,
  services: NodeServices,
  state: AgentState,
): DaemonServer {
  const { openVpn, wireGuard, nat } = services;
  const counts = async () => ({
    // Asked every two seconds by each portal: counted without reading 65,533 peers each time.
    wireGuardPeers: await wireGuard.peerCount(),
    openVpnClients: openVpn.connectedCount,
    openVpnProcesses: openVpn.processCount,
  });
  return buildDaemonServer({
    nodeKey: deps.nodeKey,
    peers: wireGuard,
    clock,
    logger: deps.logger,
    openVpn,
    nodeInfo: async () =>
      describeNode(await counts(), deps.version, {
        instanceId: state.instanceId,
        maxRevision: wireGuard.highestRevision,
        maintenanceMode: state.maintenanceMode,
        nat: nat?.described ?? null,
      }),
  });
}

/** The Node API client, saying how this node runs OpenVPN (the portal writes the server files for it). */
const MAINTENANCE_ON = 'maintenance mode on: the portal puts no new configuration here';

/**
 * Fetches the server configuration again and applies it, one fetch at a time (a refresh asked
 * for while one runs joins it); a failure keeps the configuration in use. Once stopped, it
 * waits for the refresh under way and starts none.
 */
function serverConfigRefresher(
  portal: PortalClient,
  apply: (serverConfig: NodeServerConfig) => Promise<void>,
  logger: Logger,
): { refresh(): Promise<void>; stop(): Promise<void> } {
  let refreshing: Promise<void> | null = null;
  let stopped = false;
  const refresh = (): Promise<void> => {
    if (stopped) return refreshing ?? Promise.resolve();
    refreshing ??= portal
      .fetchServerConfig()
      .then(apply)
      .catch((error: unknown) =>
        logger.warn(
          { reason: messageOf(error) },
          'refreshing the server configuration failed; keeping the current one',
        ),
      )
      .finally(() => {
        refreshing = null;
      });
    return refreshing;
  };
  const stop = async (): Promise<void> => {
    stopped = true;
    await refreshing;
  };
  return { refresh, stop };
}

function portalClientOf(deps: NodeAgentDependencies, preferAes: boolean): PortalClient {
  const { config } = deps;
  return new PortalClient({
    apiUrl: config.apiUrl,
    nodeNumber: config.nodeNumber,
    nodeKey: deps.nodeKey,
    profileIdList: config.profileIdList,
    openVpn: {
      user: config.openVpn.user,
      group: config.openVpn.group,
      preferAes,
      managementDir: config.openVpn.managementDir,
    },
    ...(deps.fetch === undefined ? {} : { fetch: deps.fetch }),
  });
}

/** Asks the portal until it answers (a node may start before its portal), or `signal` aborts. */
function firstServerConfig(
  portal: PortalClient,
  deps: NodeAgentDependencies,
  preferAes: boolean,
  signal?: AbortSignal,
): Promise<NodeServerConfig> {
  const { config, logger } = deps;
  logger.info(
    {
      apiUrl: `${config.apiUrl.origin}${config.apiUrl.pathname}`,
      nodeNumber: config.nodeNumber,
      profileIdList: config.profileIdList,
      openVpnPreferAes: preferAes,
    },
    'fetching the server configuration from the portal',
  );
  return retryWithBackoff(
    () => portal.fetchServerConfig(),
    (error, attempt, retryInMs) =>
      logger.warn(
        { attempt, retryInMs, reason: messageOf(error) },
        'cannot get the server configuration from the portal yet',
      ),
    deps.portalRetry ?? DEFAULT_BACKOFF,
    signal,
  );
}

/** Serves /metrics, read from the services at each scrape. */
async function serveMetrics(
  listen: NonNullable<NodeAgentConfig['metrics']>,
  services: {
    clock: Clock;
    wireGuard: WireGuardService;
    openVpn: OpenVpnService;
    proxyGuard: ProxyGuardService;
    nat: NodeNat | null;
  },
  logger: Logger,
): Promise<RunningMetricsServer> {
  const { clock, wireGuard, openVpn, proxyGuard, nat } = services;
  const registry = agentMetricsRegistry({
    clock,
    wireGuard: () => wireGuard.dump(),
    peerWrites: () => wireGuard.peerWrites(),
    openVpn: () => openVpn.devices(),
    proxyGuardTunnels: () => proxyGuard.relay?.tunnelCount ?? null,
    nat: nat === null ? null : () => ({ refused: nat.refusal !== null }),
  });
  // Ready once the vpn-daemon protocol is served, which is when this starts.
  const metricsServer = await startMetricsServer({ ...listen, registry, notReady: async () => null });
  logger.info(`metrics at ${metricsServer.url}`);
  return metricsServer;
}

function urlOf(address: AddressInfo | string | null): URL {
  if (address === null || typeof address === 'string')
    throw new Error(`unexpected listening address ${String(address)}`);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return new URL(`http://${host}:${address.port}`);
}
