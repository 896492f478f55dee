// "Who was it?", as an abuse report asks: a public address, a source port and a moment are
// read backwards through the deterministic NAT mapping the node had in force then (its history,
// src/core/nodes/nat-history.ts) to one client address, and the connection log names the session
// that held it at that moment. A tunnel address or a client's own address is looked up as
// `connection_log?ip=&at=` does. A node that masquerades then cannot be read backwards: the
// answer says so (409) instead of guessing, and so does an address two nodes' mappings claimed at
// once (one of them is wrong, and the portal cannot tell which), and so does a client address
// that passed from one user to another within the second asked about (times are kept to the
// second), and so does a port that was another user's under each of the two mappings of a node
// that changed its mapping within that second. Only the sessions of the key's profiles are found.
import { DeterministicNat, FIRST_NAT_PORT } from '../../net/deterministic-nat.js';
import { canonicalAddress, unmappedIpv4 } from '../../net/cidr.js';
import { ipAddressFamily } from '../../net/ip-prefix.js';
import type { AttributionAnswer, ConnectionLogEntry } from '../../protocol/admin-api.js';
import type { NodeNumber } from '../../shared/ids.js';
import { devicesOfConfigurations } from '../../storage/devices.js';
import { natMappingOfNodeAt, natMappingsInForce, type RecordedNatMapping } from '../../storage/nat-mappings.js';
import { formatAtom } from '../../shared/time.js';
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

/** A deterministic mapping that has the public address, and the NAT it computes. */
interface Claim {
  readonly entry: RecordedNatMapping;
  readonly nat: DeterministicNat;
}

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
  const replaced = await replacedWithin(ctx, query.at, inForce);
  const claiming = claimsOf(publicAddress, inForce);
  const claimingBefore = claimsOf(publicAddress, replaced);
  if (claiming.length === 0 && claimingBefore.length === 0)
    throw noNodeUses(publicAddress, query.at, [...inForce, ...replaced]);
  throwIfMasqueradedWithin(publicAddress, query.at, [...claiming, ...claimingBefore], inForce, replaced);
  const current = translationsOf(publicAddress, query.port, claiming);
  // Two nodes' mappings with the address then: one of them is misconfigured or lies about it,
  // and the portal cannot tell which. Naming either's user would be a confident guess.
  if (current.length > 1) throw sharedAddress(publicAddress, query, current);
  // A mapping applied within the asked second counts from its start, but the one it replaced was
  // still in force for part of that second: the port may have been either mapping's.
  const earlier = translationsOf(publicAddress, query.port, claimingBefore).filter(
    (before) => !current.some((now) => now.node_number === before.node_number && now.client_ip === before.client_ip),
  );
  const candidates = [...current, ...earlier];
  if (candidates.length === 0) {
    const nodes = [...new Set([...claiming, ...claimingBefore].map(({ entry }) => entry.nodeNumber))].join(', ');
    throw new PortalError(
      'no-such-session',
      `port ${query.port} of ${publicAddress} is outside every client's block at ${query.at} (node ${nodes}; blocks start at port ${FIRST_NAT_PORT})`,
    );
  }
  const found: { translation: Translation; entries: ConnectionLogEntry[] }[] = [];
  for (const translation of candidates) {
    const entries = await sessionsHolding(ctx, {
      ip: translation.client_ip,
      at: query.at,
      nodeNumber: translation.node_number as NodeNumber,
    });
    if (entries.length > 0) found.push({ translation, entries });
  }
  const users = new Set(found.flatMap(({ entries }) => entries.map((entry) => entry.user_id)));
  const [first] = found;
  if (first !== undefined && users.size > 1)
    throw found.length === 1 ? changedHands(first.translation, query, first.entries) : mappingChanged(query, found);
  if (first !== undefined)
    return { at: query.at, translation: first.translation, sessions: await withDevices(ctx, first.entries) };
  const [translation] = candidates as [Translation];
  throw new PortalError(
    'no-such-session',
    `no session held ${translation.client_ip} on node ${translation.node_number} at ${query.at} (the client of port ${query.port} of ${publicAddress})`,
  );
}

/** The deterministic mappings among these that have the public address. */
function claimsOf(publicAddress: string, mappings: readonly RecordedNatMapping[]): Claim[] {
  return mappings.flatMap((entry) => {
    if (entry.mapping.mode !== 'deterministic') return [];
    const nat = new DeterministicNat(entry.mapping.settings);
    return nat.usesAddress(publicAddress) ? [{ entry, nat }] : [];
  });
}

/** How each claiming mapping translates the port back: the client whose block holds it, if any. */
function translationsOf(publicAddress: string, port: number, claims: readonly Claim[]): Translation[] {
  return claims.flatMap(({ entry, nat }) => {
    const client = nat.clientOf(publicAddress, port);
    const block = client === null ? null : nat.blockOf(client);
    if (client === null || block === null) return [];
    return [
      {
        node_number: entry.nodeNumber,
        public_address: publicAddress,
        port,
        first_port: block.firstPort,
        last_port: block.lastPort,
        client_ip: client,
        mapping_applied_at: entry.appliedAt,
      },
    ];
  });
}

/**
 * The mappings replaced within the second `at` names: a mapping is recorded to the second it was
 * applied in (14:00:00.700 is 14:00:00), so at `at` its node's previous mapping may still have
 * been in force. One per node whose mapping in force at `at` was applied in that very second.
 */
async function replacedWithin(
  ctx: PortalContext,
  at: string,
  inForce: readonly RecordedNatMapping[],
): Promise<RecordedNatMapping[]> {
  const secondBefore = formatAtom(new Date(Date.parse(at) - 1000));
  const replaced: RecordedNatMapping[] = [];
  for (const entry of inForce) {
    if (entry.appliedAt !== at) continue;
    const before = await natMappingOfNodeAt(ctx.db, entry.nodeNumber, secondBefore);
    if (before !== undefined) replaced.push(before);
  }
  return replaced;
}

/**
 * 409 when a node that has the address changed between masquerading and a deterministic mapping
 * within the asked second: the packet may have been masqueraded, and then its port names no one.
 */
function throwIfMasqueradedWithin(
  publicAddress: string,
  at: string,
  claims: readonly Claim[],
  inForce: readonly RecordedNatMapping[],
  replaced: readonly RecordedNatMapping[],
): void {
  const claimingNodes = new Set(claims.map(({ entry }) => entry.nodeNumber));
  const changedNodes = new Set(replaced.map((entry) => entry.nodeNumber));
  const masquerading = [...inForce, ...replaced].filter(
    (entry) =>
      entry.mapping.mode === 'masquerade' && changedNodes.has(entry.nodeNumber) && claimingNodes.has(entry.nodeNumber),
  );
  const [node] = masquerading;
  if (node !== undefined)
    throw new PortalError(
      'conflict',
      `node ${node.nodeNumber} changed between masquerading and a deterministic NAT mapping with ${publicAddress} ` +
        `within ${at}, and mappings are recorded to the second, so the packet may have been masqueraded: ` +
        "a masquerading node's public address and port cannot be traced to a client (ask about another moment " +
        'of the reported activity)',
    );
}

/**
 * 409 naming every candidate: a node's NAT mapping changed within the second asked about, and
 * the port was one client's under the old mapping and another user's client under the new one.
 */
function mappingChanged(
  query: AttributionQuery & { readonly port: number },
  found: readonly { readonly translation: Translation; readonly entries: readonly ConnectionLogEntry[] }[],
): PortalError {
  const candidates = found
    .map(
      ({ translation, entries }) =>
        `node ${translation.node_number}'s mapping from ${translation.mapping_applied_at}: ${translation.client_ip}, ` +
        [...new Set(entries.map((entry) => entry.user_id))].join(', '),
    )
    .join('; ');
  return new PortalError(
    'conflict',
    `the NAT mapping with ${found[0]?.translation.public_address ?? query.ip} changed within ${query.at}, and mappings are recorded to the second, so ` +
      `port ${query.port} cannot be traced to one user (${candidates}): ask about another moment of the reported activity`,
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
