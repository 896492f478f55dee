// The history of the nodes' NAT mappings: whenever a node's `/i/node` reports a mapping other
// than the last one recorded for it, the new one is recorded from the moment the node says it
// applied it, and `node.nat_changed` is announced (syslog and webhook listeners may tell the
// outside world). Attribution reads the history back (src/core/attribution/).
import { DeterministicNat, NatSettingsError } from '../../net/deterministic-nat.js';
import type { NatMode } from '../../protocol/vpn-daemon.js';
import type { NodeNumber } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { recordNatMapping, type NatMapping } from '../../storage/nat-mappings.js';
import type { PortalContext } from '../context.js';

/** Records what a node reported about its NAT when it differs from its last recorded mapping; true when recorded. */
export async function recordNodeNat(
  ctx: Pick<PortalContext, 'db' | 'events' | 'clock' | 'logger'>,
  nodeNumber: NodeNumber,
  nat: NatMode | null,
): Promise<boolean> {
  const mapping = natMappingOf(nodeNumber, nat, ctx);
  if (mapping === null) return false;
  const now = ctx.clock.now();
  // `none` has no date of the node's: the portal's clock says when it noticed.
  const applied = nat === null ? now : new Date(nat.applied_at);
  const appliedAt = Number.isNaN(applied.getTime()) ? now : applied;
  const entry = { nodeNumber, appliedAt: formatAtom(appliedAt), mapping };
  const recorded = await ctx.events.change(ctx.db, async (trx, announce) => {
    const added = await recordNatMapping(trx, entry, formatAtom(now));
    if (added) await announce({ type: 'node.nat_changed', at: now, nodeNumber, appliedAt, mapping });
    return added;
  });
  if (recorded)
    ctx.logger.info(
      { nodeNumber, mode: mapping.mode },
      `node ${nodeNumber} NAT is ${mapping.mode} from ${entry.appliedAt}`,
    );
  return recorded;
}

/** The mapping a report describes, its settings canonical; null (logged) for settings no mapping can be computed from. */
function natMappingOf(
  nodeNumber: NodeNumber,
  nat: NatMode | null,
  ctx: Pick<PortalContext, 'logger'>,
): NatMapping | null {
  if (nat === null) return { mode: 'none' };
  if (nat.mode === 'masquerade') return { mode: 'masquerade' };
  try {
    const { settings } = new DeterministicNat({
      ranges: nat.ranges,
      publicAddresses: nat.public_addresses,
      portsPerClient: nat.ports_per_client,
    });
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
