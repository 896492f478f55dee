// "Who was it?", as an abuse report asks: a public address, a source port and a moment are
// read backwards through the deterministic NAT mapping the node had in force then (its history,
// src/core/nodes/nat-history.ts) to one client address, and the connection log names the session
// that held it at that moment. A tunnel address or a client's own address is looked up as
// `connection_log?ip=&at=` does. A node that masquerades then cannot be read backwards: the
// answer says so (409) instead of guessing, and so does an address two nodes' mappings claimed at
// once (one of them is wrong, and the portal cannot tell which), and so does a client address
// that passed from one user to another within the second asked about (times are kept to the
// second), and so does a port that was another user's under each of the two mappings of a node
// that changed its mapping within that second. A key limited to some profiles finds only their
// sessions and learns of no other node, client address or user: those are counted in a refusal,
// never named. But an ambiguity is decided over every profile, so such a key is never told a
// user with more confidence than a key for every profile would be.
import { DeterministicNat, FIRST_NAT_PORT } from '../../net/deterministic-nat.js';
import { canonicalAddress, ipv4SeenThroughNat64 } from '../../net/cidr.js';
import { ipAddressFamily } from '../../net/ip-prefix.js';
import type { AttributionAnswer, ConnectionLogEntry } from '../../protocol/admin-api.js';
import type { NodeNumber } from '../../shared/ids.js';
import { deviceOfSession, devicesOfConfigurations } from '../../storage/devices.js';
import { natMappingOfNodeAt, natMappingsInForce, type RecordedNatMapping } from '../../storage/nat-mappings.js';
import { formatAtom } from '../../shared/time.js';
import { visibleNodes, withinReach } from '../access/index.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';
import { requirePastMoment, requireReason, searchConnectionHistory } from '../sessions/index.js';

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
  requirePastMoment(ctx, asked.at);
  // A report from a dual-stack server's log writes the node's IPv4 address IPv4-mapped, one
  // from an IPv6-only server behind NAT64 in the well-known prefix.
  const query = { ...asked, ip: ipv4SeenThroughNat64(asked.ip) };
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

/** What the call may be told of: every node and session, or for a limited key those of its profiles. */
interface Sight {
  readonly limited: boolean;
  readonly node: (nodeNumber: number) => boolean;
  readonly session: (entry: ConnectionLogEntry) => boolean;
}

function sightOf(ctx: PortalContext): Sight {
  const nodes = visibleNodes(ctx);
  return {
    limited: nodes !== null,
    node: (nodeNumber) => nodes === null || nodes.has(nodeNumber as NodeNumber),
    session: (entry) => withinReach(ctx, entry.profile_id),
  };
}

/** A translation and every session (of any profile) that held its client address then. */
interface Found {
  readonly translation: Translation;
  readonly entries: readonly ConnectionLogEntry[];
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
  const sight = sightOf(ctx);
  const publicAddress = canonicalAddress(query.ip);
  const inForce = await natMappingsInForce(ctx.db, query.at);
  const replaced = await replacedWithin(ctx, query.at, inForce);
  const claiming = claimsOf(publicAddress, inForce);
  const claimingBefore = claimsOf(publicAddress, replaced);
  const claims = [...claiming, ...claimingBefore];
  // Only other profiles' nodes have the address: whatever they did, it was none of the key's users.
  if (!claims.some(({ entry }) => sight.node(entry.nodeNumber)))
    throw noNodeUses(publicAddress, query.at, claims.length > 0 ? [] : [...inForce, ...replaced], sight);
  throwIfMasqueradedWithin(publicAddress, query.at, claims, { inForce, replaced }, sight);
  const current = translationsOf(publicAddress, query.port, claiming);
  // A mapping applied within the asked second counts from its start, but the one it replaced was
  // still in force for part of that second: the port may have been either mapping's.
  const earlier = translationsOf(publicAddress, query.port, claimingBefore).filter(
    (before) => !current.some((now) => now.node_number === before.node_number && now.client_ip === before.client_ip),
  );
  const candidates = [...current, ...earlier];
  // Two nodes' mappings with the address then: one of them is misconfigured or lies about it,
  // and the portal cannot tell which. Naming either's user would be a confident guess.
  if (current.length > 1 && candidates.some((translation) => sight.node(translation.node_number)))
    throw sharedAddress(publicAddress, query, current, sight);
  const found: Found[] = [];
  for (const translation of candidates) {
    const entries = await sessionsHolding(ctx, {
      ip: translation.client_ip,
      at: query.at,
      nodeNumber: translation.node_number as NodeNumber,
    });
    if (entries.length > 0) found.push({ translation, entries });
  }
  return answerFrom(ctx, { query, publicAddress, claims, candidates, found }, sight);
}

/** The user the sessions found name, when they name one the key may see; else why not. */
async function answerFrom(
  ctx: PortalContext,
  asked: {
    readonly query: AttributionQuery & { readonly port: number };
    readonly publicAddress: string;
    readonly claims: readonly Claim[];
    readonly candidates: readonly Translation[];
    readonly found: readonly Found[];
  },
  sight: Sight,
): Promise<AttributionAnswer> {
  const { query, publicAddress, found } = asked;
  const users = new Set(found.flatMap(({ entries }) => entries.map((entry) => entry.user_id)));
  const [first] = found;
  // Two users, one of them the key's: it may not be the one who sent the packet.
  if (first !== undefined && users.size > 1 && found.some(({ entries }) => entries.some(sight.session)))
    throw found.length === 1
      ? changedHands(first.translation, query, first.entries, sight)
      : mappingChanged(query, found, sight);
  const shown = found
    .filter(({ translation }) => sight.node(translation.node_number))
    .map(({ translation, entries }) => ({ translation, entries: entries.filter(sight.session) }))
    .find(({ entries }) => entries.length > 0);
  if (shown !== undefined)
    return { at: query.at, translation: shown.translation, sessions: await withDevices(ctx, shown.entries) };
  const [translation] = asked.candidates.filter((candidate) => sight.node(candidate.node_number));
  if (translation === undefined) {
    const nodes = [...new Set(asked.claims.map(({ entry }) => entry.nodeNumber))].filter(sight.node).join(', ');
    throw new PortalError(
      'no-such-session',
      `port ${query.port} of ${publicAddress} is outside every client's block at ${query.at} (node ${nodes}; blocks start at port ${FIRST_NAT_PORT})`,
    );
  }
  throw new PortalError(
    'no-such-session',
    `no session held ${translation.client_ip} on node ${translation.node_number} at ${query.at} (the client of port ${query.port} of ${publicAddress})`,
  );
}

/** "node 0: …; node 2: …" for the items on nodes the call may see, then how many other profiles' nodes had one. */
function listSeen<T>(
  items: readonly T[],
  nodeOf: (item: T) => number,
  describe: (item: T) => string,
  sight: Sight,
): string {
  const seen = items.filter((item) => sight.node(nodeOf(item))).map(describe);
  const others = new Set(items.map(nodeOf).filter((nodeNumber) => !sight.node(nodeNumber))).size;
  if (others > 0) seen.push(`${others} node${others === 1 ? '' : 's'} of other profiles`);
  return seen.join('; ');
}

/** "node 3", or for a node of other profiles than a limited key's, only that. */
function nodeName(nodeNumber: number, sight: Sight): string {
  return sight.node(nodeNumber) ? `node ${nodeNumber}` : 'a node of other profiles';
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
  {
    inForce,
    replaced,
  }: { readonly inForce: readonly RecordedNatMapping[]; readonly replaced: readonly RecordedNatMapping[] },
  sight: Sight,
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
      `${nodeName(node.nodeNumber, sight)} changed between masquerading and a deterministic NAT mapping with ${publicAddress} ` +
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
  found: readonly Found[],
  sight: Sight,
): PortalError {
  const candidates = listSeen(
    found,
    ({ translation }) => translation.node_number,
    ({ translation, entries }) =>
      `node ${translation.node_number}'s mapping from ${translation.mapping_applied_at}: ${translation.client_ip}, ` +
      usersSeen(entries, sight),
    sight,
  );
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
  sight: Sight,
): PortalError {
  const candidates = listSeen(
    translations,
    (t) => t.node_number,
    (t) => `node ${t.node_number}: ${t.client_ip}`,
    sight,
  );
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
  sight: Sight,
): PortalError {
  const hidden = entries.filter((entry) => !sight.session(entry)).length;
  const candidates = [
    ...entries
      .filter(sight.session)
      .map(
        (entry) =>
          `${entry.user_id} (connection ${entry.connection_id}, from ${entry.connected_at}` +
          `${entry.disconnected_at === null ? ', still open' : ` until ${entry.disconnected_at}`})`,
      ),
    ...(hidden === 0 ? [] : [sessionsOfOtherProfiles(hidden)]),
  ].join('; ');
  const client = sight.node(translation.node_number)
    ? `the client address ${translation.client_ip} on node ${translation.node_number}`
    : 'a client address on a node of other profiles';
  return new PortalError(
    'conflict',
    `${client} passed from one session to ` +
      `another within ${query.at} (the client of port ${query.port} of ${translation.public_address}), and session ` +
      `times are kept to the second, so the report cannot be traced to one user (${candidates}): ask about ` +
      'another moment of the reported activity',
  );
}

/** Nobody held the address; when it is a node's public address then, the port is what was missing. */
async function noSessionHeld(ctx: PortalContext, ip: string, at: string): Promise<PortalError> {
  const address = ipAddressFamily(ip) === 4 ? canonicalAddress(ip) : null;
  const sight = sightOf(ctx);
  const node =
    address === null
      ? undefined
      : (await natMappingsInForce(ctx.db, at)).find(
          (entry) =>
            sight.node(entry.nodeNumber) &&
            entry.mapping.mode === 'deterministic' &&
            new DeterministicNat(entry.mapping.settings).usesAddress(address),
        );
  return new PortalError(
    'no-such-session',
    node === undefined
      ? `no session held ${ip} at ${at}`
      : `no session held ${ip} at ${at}: it is a public address of node ${node.nodeNumber}, give the "port" of the report`,
  );
}

/**
 * No deterministic mapping the call may see has the address then: a masquerading node among
 * `mappings` cannot be read backwards (409), else nothing (of the key's profiles) used it (404).
 */
function noNodeUses(
  publicAddress: string,
  at: string,
  mappings: readonly RecordedNatMapping[],
  sight: Sight,
): PortalError {
  const masquerading = mappings
    .filter((entry) => entry.mapping.mode === 'masquerade' && sight.node(entry.nodeNumber))
    .map((entry) => entry.nodeNumber);
  if (masquerading.length > 0)
    return new PortalError(
      'conflict',
      `no node had a deterministic NAT mapping with ${publicAddress} at ${at}, and node ${masquerading.join(', ')} ` +
        `masqueraded then: a masquerading node's public address and port cannot be traced to a client ` +
        '(ask by the tunnel address, or give the node deterministic NAT)',
    );
  const nodes = sight.limited ? "no node of the key's profiles" : 'no node';
  return new PortalError('no-such-session', `${nodes} used the public address ${publicAddress} at ${at}`);
}

/**
 * The sessions that held the address at the moment, newest first (connection_log's own look-up):
 * of the key's profiles for a client or tunnel address; of every profile on a node through NAT,
 * where another profile's session may make the answer ambiguous (and is then counted, not named).
 */
async function sessionsHolding(
  ctx: PortalContext,
  search: { readonly ip: string; readonly at: string; readonly nodeNumber?: NodeNumber },
): Promise<ConnectionLogEntry[]> {
  const { call: _call, ...portal } = ctx;
  const page = await searchConnectionHistory(search.nodeNumber === undefined ? ctx : portal, {
    ip: search.ip,
    at: search.at,
    ...(search.nodeNumber === undefined ? {} : { nodeNumber: search.nodeNumber, tunnelOnly: true }),
    limit: MAX_SESSIONS,
  });
  return page.entries;
}

/** "alice, bob" for the users of the sessions the call may see, then how many other profiles' sessions there were. */
function usersSeen(entries: readonly ConnectionLogEntry[], sight: Sight): string {
  const hidden = entries.filter((entry) => !sight.session(entry)).length;
  return [
    ...new Set(entries.filter(sight.session).map((entry) => entry.user_id)),
    ...(hidden === 0 ? [] : [sessionsOfOtherProfiles(hidden)]),
  ].join(', ');
}

function sessionsOfOtherProfiles(count: number): string {
  return `${count} session${count === 1 ? '' : 's'} of other profiles`;
}

/**
 * Each session with its configuration's device, when that configuration still exists and is the
 * session's (deviceOfSession): a later configuration of the same key, another user's perhaps,
 * does not lend the session its device.
 */
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
    device_id: deviceOfSession(devices.get(entry.connection_id), {
      userId: entry.user_id,
      endedAt: entry.disconnected_at,
    }),
  }));
}
