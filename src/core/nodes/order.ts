// Which node a new configuration goes to: the profile's nodes, shuffled (as the reference), nodes
// known to be unreachable last, nodes in maintenance not at all (their existing peers and
// clients stay; they only take no new ones). When every node is in maintenance, create says so.
import type { Profile, ProfileNode } from '../../config/portal-config.js';
import type { PortalContext } from '../context.js';
import { PortalError } from '../errors.js';

export function nodeOrder(ctx: PortalContext, profile: Profile): ProfileNode[] {
  const available = profile.nodes.filter((node) => !ctx.nodes.isInMaintenance(node.nodeNumber));
  if (available.length === 0) {
    throw new PortalError(
      'unavailable',
      `every node of profile "${profile.profileId}" is in maintenance; try again later`,
    );
  }
  const shuffled = [...available];
  for (let index = shuffled.length - 1; index > 0; index--) {
    const other = Math.floor(ctx.random() * (index + 1));
    [shuffled[index], shuffled[other]] = [shuffled[other] as ProfileNode, shuffled[index] as ProfileNode];
  }
  return [
    ...shuffled.filter((node) => !ctx.nodes.isDown(node.nodeNumber)),
    ...shuffled.filter((node) => ctx.nodes.isDown(node.nodeNumber)),
  ];
}
