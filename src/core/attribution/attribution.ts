// "Who was it?", as an abuse report asks: a public address, a source port and a moment are
// read backwards through the deterministic NAT mapping the node had in force then (its history,
// src/core/nodes/nat-history.ts) to one client address, and the connection log names the session
// that held it at that moment. A tunnel address or a client's own address is looked up as
// `connection_log?ip=&at=` does. A node that masquerades then cannot be read backwards: the
// answer says so (409) instead of guessing, and so does an address two nodes' mappings claimed at
// once (one of them is wrong, and the portal cannot tell which), and so does a client address
// that passed from one user to another within the second asked about (times are kept to the
// second). Only the sessions of the key's profiles are found.
import { DeterministicNat, FIRST_NAT_PORT } from '../../net/deterministic-nat.js';
import { canonicalAddress, unmappedIpv4 } from '../../net/cidr.js';
import { ipAddressFamily } from '../../net/ip-prefix.js';
import type { AttributionAnswer, ConnectionLogEntry } from '../../protocol/admin-api.js';
import type { NodeNumber } from '../../shared/ids.js';
import { devicesOfConfigurations } from '../../storage/devices.js';
import { natMappingsInForce, type RecordedNatMapping } from '../../storage/nat-mappings.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import { requireReason, searchConnectionHistory } from '../sessions/index.js';

export interface AttributionQuery {
  /** With `port`: a node's public IPv4 address; without: a tunnel or client address (any text form). */
  readonly ip: string;
  readonly port?: number;
  /** ATOM, UTC. */
  readonly at: string;
  readonly reason?: string;
}

/** More sessions than this behind one client address (a shared NAT in front of the clients) are not listed. */
const MAX_SESSIONS = 100;

export async function attribute(ctx: PortalContext, asked: AttributionQuery): Promise<AttributionAnswer> {
  if (ctx.config.lookups.requireReason.attribution) requireReason(asked.reason);
  // A report from a dual-stack server's log writes the node's IPv4 address IPv4-mapped.
  const query = { ...asked, ip: unmappedIpv4(asked.ip) };
  if (query.port === undefined) {
    const entries = await sessionsHolding(ctx, { ip: query.ip, at: query.at });
    if (entries.length === 0) throw await noSessionHeld(ctx, query.ip, query.at);
    return { at: query.at, translation: null, sessions: await withDevices(ctx, entries) };
  }
  return throughNat(ctx, { ...query, port: query.port });
}

type Translation = NonNullable<AttributionAnswer['translation']>;

async function throughNat(
  ctx: PortalContext,
  query: AttributionQuery & { readonly port: number },
): Promise<AttributionAnswer> {
  if (ipAddressFamily(query.ip) !== 4)
    throw new PortalError(
      'invalid-parameter',
      'invalid value for "ip": with "port", the public IPv4 address of a node (IPv6 is routed, not translated: ask without "port")',
    );
  const publicAddress = canonicalAddress(query.ip);
  const inForce = await natMappingsInForce(ctx.db, query.at);
  const claiming = inForce.flatMap((entry) => {
    if (entry.mapping.mode !== 'deterministic') return [];
    const nat = new DeterministicNat(entry.mapping.settings);
    return nat.usesAddress(publicAddress) ? [{ entry, nat }] : [];
  });
  if (claiming.length === 0) throw noNodeUses(publicAddress, query.at, inForce);
  const translations: Translation[] = [];
  for (const { entry, nat } of claiming) {
    const client = nat.clientOf(publicAddress, query.port);
    const block = client === null ? null : nat.blockOf(client);
    if (client === null || block === null) continue;
    translations.push({
      node_number: entry.nodeNumber,
      public_address: publicAddress,
      port: query.port,
      first_port: block.firstPort,
      last_port: block.lastPort,
      client_ip: client,
      mapping_applied_at: entry.appliedAt,
    });
  }
  if (translations.length === 0) {
    const nodes = claiming.map(({ entry }) => entry.nodeNumber).join(', ');
    throw new PortalError(
      'no-such-session',
      `port ${query.port} of ${publicAddress} is outside every client's block at ${query.at} (node ${nodes}; blocks start at port ${FIRST_NAT_PORT})`,
    );
  }
  // Two nodes' mappings with the address then: one of them is misconfigured or lies about it,
  // and the portal cannot tell which. Naming either's user would be a confident guess.
  if (translations.length > 1) throw sharedAddress(publicAddress, query, translations);
  const [translation] = translations as [Translation];
  const entries = await sessionsHolding(ctx, {
    ip: translation.client_ip,
    at: query.at,
    nodeNumber: translation.node_number as NodeNumber,
  });
  if (new Set(entries.map((entry) => entry.user_id)).size > 1) throw changedHands(translation, query, entries);
  if (entries.length > 0) return { at: query.at, translation, sessions: await withDevices(ctx, entries) };
  throw new PortalError(
    'no-such-session',
    `no session held ${translation.client_ip} on node ${translation.node_number} at ${query.at} (the client of port ${query.port} of ${publicAddress})`,
  );
}

/** 409 naming every candidate: each node and the client address the port translates to there. */
function sharedAddress(
  publicAddress: string,
  query: AttributionQuery & { readonly port: number },
  translations: readonly Translation[],
): PortalError {
  const candidates = translations.map((t) => `node ${t.node_number}: ${t.client_ip}`).join('; ');
  return new PortalError(
    'conflict',
    `more than one node had a NAT mapping with ${publicAddress} at ${query.at}, so port ${query.port} cannot be ` +
      `traced to one client (${candidates}): check which node really uses the address, then ask by that ` +
      'client address (without "port")',
  );
}

/**
 * 409 naming every candidate session: the client address passed from one user's session to
 * another's within the second asked about. Times are kept to the second (the connection log
 * and a report alike), so the session that ended in that second and the one that began in it
 * both held the address then, and which of them sent the reported packet cannot be known.
 * Sessions of one user (a reconnect) name that user, and are answered.
 */
function changedHands(
  translation: Translation,
  query: AttributionQuery & { readonly port: number },
  entries: readonly ConnectionLogEntry[],
): PortalError {
  const candidates = entries
    .map(
      (entry) =>
        `${entry.user_id} (connection ${entry.connection_id}, from ${entry.connected_at}` +
        `${entry.disconnected_at === null ? ', still open' : ` until ${entry.disconnected_at}`})`,
    )
    .join('; ');
  return new PortalError(
    'conflict',
    `the client address ${translation.client_ip} on node ${translation.node_number} passed from one session to ` +
      `another within ${query.at} (the client of port ${query.port} of ${translation.public_address}), and session ` +
      `times are kept to the second, so the report cannot be traced to one user (${candidates}): ask about ` +
      'another moment of the reported activity',
  );
}

/** Nobody held the address; when it is a node's public address then, the port is what was missing. */
async function noSessionHeld(ctx: PortalContext, ip: string, at: string): Promise<PortalError> {
  const address = ipAddressFamily(ip) === 4 ? canonicalAddress(ip) : null;
  const node =
    address === null
      ? undefined
      : (await natMappingsInForce(ctx.db, at)).find(
          (entry) =>
            entry.mapping.mode === 'deterministic' && new DeterministicNat(entry.mapping.settings).usesAddress(address),
        );
  return new PortalError(
    'no-such-session',
    node === undefined
      ? `no session held ${ip} at ${at}`
      : `no session held ${ip} at ${at}: it is a public address of node ${node.nodeNumber}, give the "port" of the report`,
  );
}

/** No deterministic mapping has the address then: a masquerading node cannot be read backwards (409), else nothing uses it (404). */
function noNodeUses(publicAddress: string, at: string, inForce: readonly RecordedNatMapping[]): PortalError {
  const masquerading = inForce.filter((entry) => entry.mapping.mode === 'masquerade').map((entry) => entry.nodeNumber);
  if (masquerading.length > 0)
    return new PortalError(
      'conflict',
      `no node had a deterministic NAT mapping with ${publicAddress} at ${at}, and node ${masquerading.join(', ')} ` +
        `masqueraded then: a masquerading node's public address and port cannot be traced to a client ` +
        '(ask by the tunnel address, or give the node deterministic NAT)',
    );
  return new PortalError('no-such-session', `no node used the public address ${publicAddress} at ${at}`);
}

/** The sessions of the key's profiles that held the address at the moment, newest first (connection_log's own look-up). */
async function sessionsHolding(
  ctx: PortalContext,
  search: { readonly ip: string; readonly at: string; readonly nodeNumber?: NodeNumber },
): Promise<ConnectionLogEntry[]> {
  const page = await searchConnectionHistory(ctx, {
    ip: search.ip,
    at: search.at,
    ...(search.nodeNumber === undefined ? {} : { nodeNumber: search.nodeNumber, tunnelOnly: true }),
    limit: MAX_SESSIONS,
  });
  return page.entries;
}

async function withDevices(
  ctx: PortalContext,
  entries: readonly ConnectionLogEntry[],
): Promise<AttributionAnswer['sessions']> {
  const devices = await devicesOfConfigurations(
    ctx.db,
    entries.map((entry) => entry.connection_id),
  );
  return entries.map(({ bytes_in: _in, bytes_out: _out, ...entry }) => ({
    ...entry,
    device_id: devices.get(entry.connection_id) ?? null,
  }));
}
