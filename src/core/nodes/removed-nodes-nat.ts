// The NAT mapping of a node taken out of the configuration: no pass asks that node for its
// `/i/node` any more, so its last mapping would stay in force for ever, and its public addresses,
// when another node serves them now, would be claimed by two nodes (attribution answers 409) or
// by the removed one alone (a masquerading successor's answer is never given). A full pass, the
// one that ends the node's sessions (src/core/sessions/removed-nodes.ts), records `none` for it
// from its time: reports about that time and later no longer read the old mapping, and those
// about earlier ones still do (the history keeps every row).
import type { NodeNumber } from '../../shared/ids.js';
import { formatAtom } from '../../shared/time.js';
import { nodesTranslatingOff, recordNatMapping } from '../../storage/nat-mappings.js';
import type { PortalContext } from '../context.js';

/** Records `none` from now for each node no longer configured whose last mapping translates; answers those recorded. */
export async function endNatOfRemovedNodes(
  ctx: Pick<PortalContext, 'db' | 'events' | 'clock' | 'logger' | 'config'>,
): Promise<NodeNumber[]> {
  const removed = await nodesTranslatingOff(ctx.db, [...ctx.config.nodes.keys()]);
  const ended: NodeNumber[] = [];
  for (const nodeNumber of removed) {
    const now = ctx.clock.now();
    // Under the node's lock, and only when its last mapping still translates: another
    // instance's pass that got there first leaves nothing to record.
    const entry = await ctx.events.change(ctx.db, async (trx, announce) => {
      const recorded = await recordNatMapping(
        trx,
        { nodeNumber, appliedAt: formatAtom(now), mapping: { mode: 'none' } },
        formatAtom(now),
      );
      if (recorded !== null)
        await announce({
          type: 'node.nat_changed',
          at: now,
          nodeNumber,
          appliedAt: new Date(recorded.appliedAt),
          mapping: { mode: 'none' },
        });
      return recorded;
    });
    if (entry === null) continue;
    ended.push(nodeNumber);
    ctx.logger.warn(
      { nodeNumber, appliedAt: entry.appliedAt },
      `node ${nodeNumber} is no longer configured: its NAT is none from ${entry.appliedAt}, and its public addresses name none of its users after that`,
    );
  }
  return ended;
}
