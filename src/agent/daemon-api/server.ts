// The HTTP server the portal calls: the vpn-daemon protocol (reference §6.5, §8.5) over the
// node's WireGuard peers and OpenVPN clients, behind the node secret.
import Fastify, { LogController, type FastifyError } from 'fastify';
import type { Logger } from 'pino';
import type { WireGuardKey } from '../../shared/ids.js';
import { createBearerCheck } from './bearer-auth.js';
import { isOnline } from '../../shared/online.js';
import type { Clock } from '../../shared/time.js';
import { toPeerListEntry } from './peer.js';
import {
  MAX_PEERS_PER_ADD,
  parseAddPeerForm,
  parseAddPeersForm,
  parseDisconnectClientForm,
  parseRemovePeerForm,
  parseShowAll,
  VPN_DAEMON_PATHS,
  type NodeInfo,
} from '../../protocol/vpn-daemon.js';
import type { Secret } from '../../shared/secret.js';
import type { ListedPeer, WgPeer } from '../wireguard/dump.js';

/** The node's WireGuard peers as the daemon protocol needs them. */
export interface WireGuardPeers {
  list(): Promise<readonly ListedPeer[]>;
  /** `revision`: see src/agent/wireguard/revisions.ts; an instruction older than the last applied one changes nothing. */
  add(publicKey: WireGuardKey, allowedIps: readonly string[], revision: number | null): Promise<void>;
  /** The peer as it was before removal, or null when it was not there (or the removal was outdated). */
  remove(publicKey: WireGuardKey, revision: number | null): Promise<WgPeer | null>;
}

/** Thrown by WireGuardPeers when this node runs no WireGuard profile (answered with 503). */
export class WireGuardUnavailableError extends Error {
  constructor() {
    super('WireGuard is not configured on this node');
    this.name = 'WireGuardUnavailableError';
  }
}

/**
 * Thrown by OpenVpnConnections when a running OpenVPN server that may have clients cannot be
 * reached for a moment (answered with 503). The portal keeps a revocation pending and reconciles
 * the node; a disconnect is carried out as soon as the agent reaches the server again.
 */
export class OpenVpnUnreachableError extends Error {
  constructor(servers: readonly string[], what: 'end the connection' | 'list its connections') {
    super(`the agent could not reach the OpenVPN server(s) ${servers.join(', ')} to ${what} right now`);
    this.name = 'OpenVpnUnreachableError';
  }
}

/** A connected OpenVPN client as `/o/connection_list` lists it. */
export interface OpenVpnConnection {
  readonly commonName: string;
  readonly ipFour: string;
  /** Null when the server has no IPv6 pool. */
  readonly ipSix: string | null;
}

/** The node's OpenVPN clients as the daemon protocol needs them. */
export interface OpenVpnConnections {
  /** Every connected client of every OpenVPN process; OpenVpnUnreachableError when one cannot say. */
  list(): Promise<readonly OpenVpnConnection[]>;
  /**
   * Ends every connection with this common name on every process (none: nothing happens);
   * OpenVpnUnreachableError when a running process could not be told.
   */
  disconnect(commonName: string): Promise<void>;
}

export interface DaemonServerOptions {
  readonly nodeKey: Secret;
  readonly peers: WireGuardPeers;
  /** Absent: no `/o/` calls at all (404). */
  readonly openVpn?: OpenVpnConnections;
  readonly nodeInfo: () => Promise<NodeInfo>;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** add_peer and remove_peer bodies are a few hundred bytes. */
const BODY_LIMIT_BYTES = 4096;
const FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded';

/**
 * The vpn-daemon HTTP protocol: `/i/node`, WireGuard's `/w/peer_list`, `/w/add_peer`,
 * `/w/remove_peer`, OpenVPN's `/o/connection_list` and `/o/disconnect_client`.
 */
export function buildDaemonServer(options: DaemonServerOptions) {
  const app = createFormServer(options.logger);
  requireBearer(app, options.nodeKey);
  answerErrorsAsJson(app);
  app.get(VPN_DAEMON_PATHS.nodeInfo, async () => options.nodeInfo());
  routeWireGuardCalls(app, options.peers, options.clock);
  // Without OpenVPN support the calls do not exist (404), as on a WireGuard-only daemon.
  if (options.openVpn !== undefined) routeOpenVpnCalls(app, options.openVpn);
  return app;
}

/** A Fastify server that reads only form bodies (anything else is answered with 415) and logs little. */
function createFormServer(logger: Logger) {
  // The portal calls often (reconcile, listings); per-request log lines would drown the rest.
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    // No child logger per request (thousands per reconcile): the few lines logged name the URL.
    childLoggerFactory: (parent) => parent,
    bodyLimit: BODY_LIMIT_BYTES,
  });

  // Only form bodies are part of the protocol; anything else is answered with 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(FORM_CONTENT_TYPE, { parseAs: 'string' }, (_request, body, done) => {
    done(null, new URLSearchParams(String(body)));
  });
  return app;
}

type FormServer = ReturnType<typeof createFormServer>;

function formOf(body: unknown): URLSearchParams {
  return body instanceof URLSearchParams ? body : new URLSearchParams();
}

/** Every call needs the node secret as its bearer token (401 without it). */
function requireBearer(app: FormServer, nodeKey: Secret): void {
  const isAuthorized = createBearerCheck(nodeKey);
  // onRequest runs before the body is read: unauthenticated bodies are never parsed.
  app.addHook('onRequest', (request, reply, done) => {
    if (isAuthorized(request.headers.authorization)) done();
    else void reply.code(401).header('WWW-Authenticate', 'Bearer').send({ error: 'missing or invalid bearer token' });
  });
}

/** Errors and unknown calls as `{"error": …}`: 503 without WireGuard, internal errors logged and not shown. */
function answerErrorsAsJson(app: FormServer): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof WireGuardUnavailableError || error instanceof OpenVpnUnreachableError)
      return reply.code(503).send({ error: error.message });
    const status = error.statusCode ?? 500;
    if (status >= 500) {
      request.log.error({ err: error, url: request.url }, 'request failed');
      return reply.code(status).send({ error: 'internal error' });
    }
    return reply.code(status).send({ error: error.message });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: `no such call: ${request.method} ${request.url.split('?')[0]}` }),
  );
}

/** `/w/peer_list`, `/w/add_peer`, our `/w/add_peers` and `/w/remove_peer`. */
function routeWireGuardCalls(app: FormServer, peers: WireGuardPeers, clock: Clock): void {
  app.get(VPN_DAEMON_PATHS.peerList, async (request, reply) => {
    const showAll = parseShowAll(request.query);
    if (!showAll.ok) return reply.code(400).send({ error: showAll.error });
    const now = clock.now();
    const listed = (await peers.list()).filter((peer) => showAll.value || isOnline(peer.latestHandshake, now));
    return { peer_list: listed.map(toPeerListEntry) };
  });

  app.post(VPN_DAEMON_PATHS.addPeer, async (request, reply) => {
    const parsed = parseAddPeerForm(formOf(request.body));
    if (!parsed.ok) return reply.code(400).send({ error: parsed.error });
    await peers.add(parsed.value.publicKey, parsed.value.allowedIps, parsed.value.revision);
    return reply.code(204).send();
  });

  // Ours: a reconcile pass's adds, many per request (the HTTP handling of each add_peer cost the
  // agent more CPU than writing its peer); each peer goes exactly the way of one add_peer.
  app.post(VPN_DAEMON_PATHS.addPeers, { bodyLimit: MAX_PEERS_PER_ADD * BODY_LIMIT_BYTES }, async (request, reply) => {
    const parsed = parseAddPeersForm(formOf(request.body));
    if (!parsed.ok) return reply.code(400).send({ error: parsed.error });
    await Promise.all(parsed.value.map((peer) => peers.add(peer.publicKey, peer.allowedIps, peer.revision)));
    return reply.code(204).send();
  });

  app.post(VPN_DAEMON_PATHS.removePeer, async (request, reply) => {
    const parsed = parseRemovePeerForm(formOf(request.body));
    if (!parsed.ok) return reply.code(400).send({ error: parsed.error });
    const removed = await peers.remove(parsed.value.publicKey, parsed.value.revision);
    if (removed === null) return reply.code(204).send();
    return reply.code(200).send(toPeerListEntry(removed));
  });
}

/** `/o/connection_list` and `/o/disconnect_client`. */
function routeOpenVpnCalls(app: FormServer, openVpn: OpenVpnConnections): void {
  app.get(VPN_DAEMON_PATHS.connectionList, async () => {
    const connections = await openVpn.list();
    return {
      connection_list: connections.map((connection) => ({
        common_name: connection.commonName,
        ip_four: connection.ipFour,
        ip_six: connection.ipSix,
      })),
    };
  });

  app.post(VPN_DAEMON_PATHS.disconnectClient, async (request, reply) => {
    const parsed = parseDisconnectClientForm(formOf(request.body));
    if (!parsed.ok) return reply.code(400).send({ error: parsed.error });
    await openVpn.disconnect(parsed.value.commonName);
    return reply.code(204).send();
  });
}

export type DaemonServer = ReturnType<typeof buildDaemonServer>;
