// POST /create: makes the user when missing, then one configuration for a profile, in the
// first format the client accepts that the profile can serve (specification §4.6).
// Order: validate, write the database (the source of truth), then tell the node.
// The WireGuard path is here; the OpenVPN one in issue-openvpn.ts.
import type { Profile, ProfileNode } from '../config/portal-config.js';
import { ensureUser } from '../storage/users.js';
import { insertPeer, type WireGuardPeer } from '../storage/wg-peers.js';
import { isWriteConflict } from '../storage/errors.js';
import { generateWireGuardKeyPair, type WireGuardKeyPair } from '../wireguard/keys.js';
import { renderWireGuardFile, type ConfigurationFile, type WireGuardFileFormat } from './configuration-file.js';
import type { PortalContext } from './context.js';
import { PortalError } from './errors.js';
import { configurationExpiry } from './expiry.js';
import { offeredFormats } from './offered-formats.js';
import type { ProfileId, UserId } from './ids.js';
import { chooseFormats, describeNoCommonFormat, MIME_TYPES, type ConfigFormat } from './protocol-selection.js';
import { formatAtom } from './time.js';
import { allocateAddresses } from './wireguard-addresses.js';
import { issueOpenVpn } from './issue-openvpn.js';
import { nodeOrder } from './node-order.js';
import { addPeersToNodes } from './node-peers.js';

export interface CreateConfigurationRequest {
  readonly userId: UserId;
  readonly profileId: ProfileId;
  readonly displayName: string;
  readonly preferTcp: boolean;
  readonly expiresIn: string | undefined;
  readonly accept: string | undefined;
}

export interface IssuedConfiguration {
  readonly format: ConfigFormat;
  readonly contentType: string;
  readonly body: string;
  /** Set when the file is meant to be saved under this name (the Apple profile). */
  readonly downloadFileName: string | null;
  readonly expiresAt: Date;
}

/** Attempts at a database write that lost a race for a unique address (another portal instance). */
const MAX_ATTEMPTS = 5;

/** Thrown inside the transaction when the pool is full, so a user created by this request is rolled back too. */
class PoolFull extends Error {}

export async function createConfiguration(ctx: PortalContext, request: CreateConfigurationRequest): Promise<IssuedConfiguration> {
  const profile = ctx.config.profiles.find((candidate) => candidate.profileId === request.profileId);
  if (profile === undefined) throw new PortalError('no-such-profile', 'no such "profile_id"');

  const now = ctx.clock.now();
  // The CA's end caps every configuration's expiry (reference §10), WireGuard ones too.
  const ca = await ctx.openVpnKeys.ca();
  const expiresAt = cappedExpiry(configurationExpiry(ctx.config, now, request.expiresIn), ca?.notAfter ?? null);
  const offered = offeredFormats(profile, ctx.config.wireGuard);
  const formats = chooseFormats(request.accept, offered, request.preferTcp);
  if (formats.length === 0) throw new PortalError('no-common-protocol', describeNoCommonFormat(request.accept, offered));

  // Formats are tried in order (reference §5.2): WireGuard fails over to OpenVPN when no node
  // has a free address. The WireGuard formats share one address pool, so one try covers them all.
  let wireGuardTried = false;
  for (const format of formats) {
    let issued: ConfigurationFile | null;
    if (format === 'openvpn') {
      issued = await issueOpenVpn(ctx, { request, profile, now, expiresAt });
    } else if (wireGuardTried) {
      continue;
    } else {
      wireGuardTried = true;
      issued = await issueWireGuard(ctx, request, profile, format, now, expiresAt);
    }
    if (issued !== null) return { format, contentType: MIME_TYPES[format], body: issued.body, downloadFileName: issued.downloadFileName, expiresAt };
  }
  throw new PortalError('addresses-exhausted', `no free client address for profile "${profile.profileId}" on any of its nodes`);
}

function cappedExpiry(expiresAt: Date, caNotAfter: Date | null): Date {
  return caNotAfter !== null && caNotAfter.getTime() < expiresAt.getTime() ? caNotAfter : expiresAt;
}

async function issueWireGuard(
  ctx: PortalContext,
  request: CreateConfigurationRequest,
  profile: Profile,
  format: WireGuardFileFormat,
  now: Date,
  expiresAt: Date,
): Promise<ConfigurationFile | null> {
  const keyPair = generateWireGuardKeyPair();
  for (const node of nodeOrder(ctx, profile)) {
    const serverPublicKey = ctx.keys.wireGuardPublicKey(node.nodeNumber);
    if (serverPublicKey === null || node.wireGuard === null) {
      ctx.logger.warn({ nodeNumber: node.nodeNumber }, `node ${node.nodeNumber} has no WireGuard key; run "vpn-portal generate-secrets"`);
      continue;
    }
    const peer = await storePeer(ctx, request, profile, node, keyPair, now, expiresAt);
    if (peer === null) continue;
    await addPeersToNodes(ctx, [peer], 'create');
    return renderWireGuardFile(
      format,
      {
        portalBaseUrl: ctx.config.baseUrl,
        proxy: ctx.config.wireGuard.proxy,
        profileId: profile.profileId,
        profileDisplayName: profile.displayName,
        wireGuard: {
          hostName: node.hostName,
          listenPort: ctx.config.wireGuard.listenPort,
          mtu: ctx.config.wireGuard.mtu,
          serverPublicKey,
          rangeFour: node.wireGuard.rangeFour,
          rangeSix: node.wireGuard.rangeSix,
          defaultGateway: profile.defaultGateway,
          dnsServerList: [...profile.dnsServerList],
          dnsSearchDomainList: [...profile.dnsSearchDomainList],
          routeList: [...profile.routeList],
          excludeRouteList: [...profile.excludeRouteList],
          keepAlive: profile.wireGuard?.keepAlive ?? false,
        },
      },
      {
        publicKey: keyPair.publicKey,
        displayName: request.displayName,
        wireGuard: { privateKey: keyPair.privateKey, ipFour: peer.ipFour, ipSix: peer.ipSix },
      },
    );
  }
  return null;
}

/** Writes the user (when new) and the peer in one transaction; null when the node's pool is full. */
async function storePeer(
  ctx: PortalContext,
  request: CreateConfigurationRequest,
  profile: Profile,
  node: ProfileNode,
  keyPair: WireGuardKeyPair,
  now: Date,
  expiresAt: Date,
): Promise<WireGuardPeer | null> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ctx.db.transaction().execute(async (trx) => {
        const user = await ensureUser(trx, request.userId, formatAtom(now));
        if (user.isDisabled) throw new PortalError('user-disabled', 'user is disabled');
        const addresses = await allocateAddresses(trx, profile.profileId, node);
        if (addresses === null) throw new PoolFull();
        return insertPeer(trx, {
          publicKey: keyPair.publicKey,
          userId: request.userId,
          profileId: profile.profileId,
          nodeNumber: node.nodeNumber,
          displayName: request.displayName,
          ipFour: addresses.ipFour,
          ipSix: addresses.ipSix,
          poolIndex: addresses.poolIndex,
          createdAt: formatAtom(now),
          expiresAt: formatAtom(expiresAt),
          authKey: null,
        });
      });
    } catch (error) {
      if (error instanceof PoolFull) return null;
      // An address still held by a configuration from before a range change, or a
      // concurrent writer: the transaction rolled back, so simply try again.
      // (Also a user destroyed on another instance meanwhile, a deadlock or a serialization failure.)
      if (!isWriteConflict(error) || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}
