// Which node a new configuration goes to.
import type { Profile, ProfileNode } from '../config/portal-config.js';
import type { PortalContext } from './context.js';

/** The profile's nodes, shuffled (as the reference), with nodes known to be unreachable last. */
export function nodeOrder(ctx: PortalContext, profile: Profile): ProfileNode[] {
  const shuffled = [...profile.nodes];
  for (let index = shuffled.length - 1; index > 0; index--) {
    const other = Math.floor(ctx.random() * (index + 1));
    [shuffled[index], shuffled[other]] = [shuffled[other] as ProfileNode, shuffled[index] as ProfileNode];
  }
  return [...shuffled.filter((node) => !ctx.nodes.isDown(node.nodeNumber)), ...shuffled.filter((node) => ctx.nodes.isDown(node.nodeNumber))];
}
