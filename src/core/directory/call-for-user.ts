// One SCIM request can change several users (a group's members): each change is recorded in the
// audit log under the request's call, with the user it was about, so the log can be searched
// by user as for the Admin API's own calls.
import type { UserId } from '../../shared/ids.js';
import type { PortalContext } from '../context.js';

export function callForUser(ctx: PortalContext, userId: UserId): PortalContext {
  if (ctx.call === undefined) return ctx;
  const call = { ...ctx.call, parameters: { ...ctx.call.parameters, user_id: userId } };
  return { ...ctx, call, events: ctx.events.forCall(call) };
}
