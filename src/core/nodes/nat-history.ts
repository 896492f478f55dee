// The history of the nodes' NAT mappings: whenever a node's `/i/node` reports a mapping other
// than the last one recorded for it, the new one is recorded from the moment the node says it
// applied it, and `node.nat_changed` is announced (syslog and webhook listeners may tell the
// outside world). Attribution reads the history back (src/core/attribution/). What a node says is
// not taken on trust: a mapping of ranges that are not its configured client ranges is refused,
// public addresses another node's mapping has too are logged, and the node's date of the change
// is kept between its last recorded change (or the portal's first contact) and the portal's now.
import { DeterministicNat, type NatSettings, NatSettingsError } from '../../net/deterministic-nat.js';
import { type IpPrefix, parseIpPrefix, prefixContains } from '../../net/ip-prefix.js';
import type { NatMode } from '../../protocol/vpn-daemon.js';
import type { NodeNumber } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { type NatMapping, natMappingsInForce, recordNatMapping } from '../../storage/nat-mappings.js';
import type { PortalContext } from '../context.js';

/**
 * Records what a node reported about its NAT when it differs from its last recorded mapping; true
 * when recorded. `firstContact`: when this portal first heard from the node, before which a first
 * mapping cannot have been applied as far as the portal can vouch (the storage clamps the moment).
 */
export async function recordNodeNat(
  ctx: Pick<PortalContext, 'db' | 'events' | 'clock' | 'logger' | 'config'>,
  nodeNumber: NodeNumber,
  nat: NatMode | null,
  firstContact?: Date,
): Promise<boolean> {
  const mapping = natMappingOf(nodeNumber, nat, ctx);
  if (mapping === null) return false;
  const now = ctx.clock.now();
  // `none` has no date of the node's: the portal's clock says when it noticed.
  const reportedDate = nat === null ? now : new Date(nat.applied_at);
  const applied = vouchable(reportedDate, now);
  const reported = formatAtom(applied);
  const notBefore = firstContact === undefined ? undefined : formatAtom(firstContact);
  const recorded = await ctx.events.change(ctx.db, async (trx, announce) => {
    const entry = await recordNatMapping(trx, { nodeNumber, appliedAt: reported, mapping }, formatAtom(now), notBefore);
    if (entry !== null)
      await announce({
        type: 'node.nat_changed',
        at: now,
        nodeNumber,
        // The node's own moment, to the millisecond, unless the portal had to move it.
        appliedAt: entry.appliedAt === reported ? applied : new Date(entry.appliedAt),
        mapping,
      });
    return entry;
  });
  if (recorded === null) return false;
  if (recorded.appliedAt !== reported || applied !== reportedDate) {
    const said = nat?.applied_at ?? reported;
    ctx.logger.warn(
      { nodeNumber, reported: said, recorded: recorded.appliedAt },
      `node ${nodeNumber} says it applied its NAT at ${said}, outside what the portal can vouch for: recorded from ${recorded.appliedAt}`,
    );
  }
  ctx.logger.info(
    { nodeNumber, mode: mapping.mode },
    `node ${nodeNumber} NAT is ${mapping.mode} from ${recorded.appliedAt}`,
  );
  if (mapping.mode === 'deterministic') await warnOfSharedAddresses(ctx, nodeNumber, mapping.settings, formatAtom(now));
  return true;
}

/**
 * The node's date, as far as the portal's clock can take it: no date (unparsable) or one after
 * `now` is `now`, one before 1970 is 1970 (the storage moves it up to the node's last change or
 * first contact). Dates are stored as text that sorts as time only between years 0 and 9999.
 */
function vouchable(reported: Date, now: Date): Date {
  const time = reported.getTime();
  if (Number.isNaN(time) || time > now.getTime()) return now;
  return time < 0 ? new Date(0) : reported;
}

/** The IPv4 client ranges the configuration gives the node (every profile on it, WireGuard and OpenVPN). */
function clientRangesOf(config: PortalContext['config'], nodeNumber: NodeNumber): IpPrefix[] {
  return config.profiles.flatMap((profile) =>
    profile.nodes
      .filter((node) => node.nodeNumber === nodeNumber)
      .flatMap((node) => [node.wireGuard?.rangeFour, node.openVpn?.rangeFour])
      .filter((range): range is string => range !== undefined && range !== '')
      .map(parseIpPrefix),
  );
}

/** Another node's current mapping with one of these public addresses: attribution through it cannot tell them apart. */
async function warnOfSharedAddresses(
  ctx: Pick<PortalContext, 'db' | 'logger'>,
  nodeNumber: NodeNumber,
  settings: NatSettings,
  now: string,
): Promise<void> {
  const ours = new Set(settings.publicAddresses);
  for (const other of await natMappingsInForce(ctx.db, now)) {
    if (other.nodeNumber === nodeNumber || other.mapping.mode !== 'deterministic') continue;
    const shared = other.mapping.settings.publicAddresses.filter((address) => ours.has(address));
    if (shared.length > 0)
      ctx.logger.warn(
        { nodeNumber, otherNode: other.nodeNumber, shared },
        `node ${nodeNumber} reports public address(es) ${shared.join(', ')} that node ${other.nodeNumber} reports too: ` +
          'one of them is misconfigured or lies, and attribution through these addresses names no single user',
      );
  }
}

/** The mapping a report describes, its settings canonical; null (logged) for settings no mapping can be computed from. */
function natMappingOf(
  nodeNumber: NodeNumber,
  nat: NatMode | null,
  ctx: Pick<PortalContext, 'logger' | 'config'>,
): NatMapping | null {
  if (nat === null) return { mode: 'none' };
  if (nat.mode === 'masquerade') return { mode: 'masquerade' };
  try {
    const { settings } = new DeterministicNat({
      ranges: nat.ranges,
      publicAddresses: nat.public_addresses,
      portsPerClient: nat.ports_per_client,
    });
    const allowed = clientRangesOf(ctx.config, nodeNumber);
    const outside = settings.ranges.filter(
      (range) => !allowed.some((client) => prefixContains(client, parseIpPrefix(range))),
    );
    if (outside.length > 0) {
      ctx.logger.warn(
        { nodeNumber, outside },
        `node ${nodeNumber} reports a deterministic NAT for ${outside.join(', ')}, outside its configured client ranges; not recorded`,
      );
      return null;
    }
    return { mode: 'deterministic', settings };
  } catch (error) {
    // Settings that do not fit, or an address or range that is not one: the node's report is wrong.
    const reason = error instanceof NatSettingsError || error instanceof Error ? error.message : String(error);
    ctx.logger.warn(
      { nodeNumber },
      `node ${nodeNumber} reports a deterministic NAT the portal cannot compute (${reason}); not recorded`,
    );
    return null;
  }
}
