// Runs before anything else on a SCIM request: the source address must be in `scim.allowList`
// (403), then the Bearer token must be an admin key (checked against the database: unknown,
// revoked, expired → 401) of scope `scim` (any other scope → 403: a key for the Admin API is
// not one for a directory, and the specification's secret is not accepted either), used from
// an address its own allow-list allows (403). Refusals are recorded in the audit log. Who asks
// is left on the request for the call.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AdminKeyUse, callerKeyOf, checkAdminKey, recordAdminCall } from '../../core/access/index.js';
import { unauthenticatedCaller, type AdminCaller } from '../../core/admin-call.js';
import type { PortalContext } from '../../core/context.js';
import { ADMIN_KEY_PREFIX } from '../../keys/admin-key-token.js';
import { AddressAllowList } from '../../net/address-allow-list.js';
import { decodePath } from '../plumbing/surface.js';
import { sendScimError } from './scim-reply.js';

const BEARER_PREFIX = 'Bearer ';
const UNAUTHENTICATED = { 'www-authenticate': 'Bearer realm="SCIM"' };

/** Who asks, per request, once the guard let it through. */
export type ScimCallers = WeakMap<FastifyRequest, AdminCaller>;

export function scimGuard(ctx: PortalContext, callers: ScimCallers, base: string) {
  const allowList = new AddressAllowList(ctx.config.scim.allowList);
  const keyUse = new AdminKeyUse(ctx);
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (callers.has(request)) return;
    const refuse = async (caller: AdminCaller, status: 401 | 403, detail: string, told: string): Promise<void> => {
      request.log.warn({ ip: request.ip, detail }, 'SCIM request refused');
      const name = `scim ${request.method} ${decodePath(request.url.split('?')[0] ?? '').replace(base, '')}`;
      await recordAdminCall(ctx, { caller, name, parameters: {}, successStatus: 200 }, status, detail).catch(
        (error: unknown) =>
          request.log.error({ err: error }, 'could not record a refused SCIM request in the audit log'),
      );
      await sendScimError(reply, status, null, told, status === 401 ? UNAUTHENTICATED : {});
    };
    if (!allowList.allows(request.ip)) {
      const detail = `source address ${request.ip} not in scim.allowList`;
      await refuse(unauthenticatedCaller(request.ip), 403, detail, 'source address not allowed');
      return;
    }
    const header = request.headers.authorization;
    const token =
      typeof header === 'string' && header.startsWith(BEARER_PREFIX) ? header.slice(BEARER_PREFIX.length) : null;
    if (token === null || !token.startsWith(ADMIN_KEY_PREFIX)) {
      const detail = token === null ? 'no Bearer token' : 'not an admin key';
      await refuse(
        unauthenticatedCaller(request.ip),
        401,
        detail,
        'authentication required: an admin key of scope scim',
      );
      return;
    }
    const check = await checkAdminKey(ctx, token);
    if (!check.valid) {
      await refuse(unauthenticatedCaller(request.ip, check.keyName), 401, check.reason, 'authentication required');
      return;
    }
    const { key } = check;
    const caller: AdminCaller = { kind: 'admin-key', key: callerKeyOf(key), sourceAddress: request.ip };
    if (key.scope !== 'scim') {
      const message = `key "${key.name}" has scope "${key.scope}"; SCIM needs a key of scope "scim"`;
      await refuse(caller, 403, message, message);
      return;
    }
    if (key.allowList !== null && !new AddressAllowList(key.allowList).allows(request.ip)) {
      const message = `source address ${request.ip} is not allowed for key "${key.name}"`;
      await refuse(caller, 403, message, message);
      return;
    }
    callers.set(request, caller);
    // "Last used" is bookkeeping: it never delays or fails the call.
    keyUse
      .note(key, request.ip)
      .catch((error: unknown) =>
        request.log.warn({ err: error, key: key.name }, 'could not note the use of an admin key'),
      );
  };
}
