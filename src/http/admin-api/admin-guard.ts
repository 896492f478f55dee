// Runs before anything else on an Admin API request, in this order: the source address
// must be on the allow-list (403); then the Bearer token: an admin key (`vpa_…`, checked
// against the database: unknown, wrong checksum, expired, revoked or rotated out → 401) must
// also allow the source address itself (403); any other token is the specification's secret,
// which needs its key file (503 without) and must match it (401, compared in constant time).
// Routing comes after, so an unauthenticated client learns nothing about which paths exist.
// Who asks is left on the request (AdminRequests) for the scope check, the call and the audit log.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { unauthenticatedCaller, type AdminCaller } from '../../core/admin-call.js';
import { callerKeyOf, checkAdminKey, type AdminKeyUse } from '../../core/access/index.js';
import type { PortalContext } from '../../core/context.js';
import { ADMIN_KEY_PREFIX } from '../../keys/admin-key-token.js';
import { AddressAllowList } from '../../net/address-allow-list.js';
import type { AdminRequests } from './admin-requests.js';
import { sendError } from '../plumbing/error-reply.js';

const BEARER_PREFIX = 'Bearer ';
const UNAUTHENTICATED = { 'www-authenticate': 'Bearer realm="Admin API"' };

export interface AdminGuardOptions {
  readonly ctx: PortalContext;
  readonly allowList: AddressAllowList;
  readonly requests: AdminRequests;
  readonly keyUse: AdminKeyUse;
}

export function adminGuard({ ctx, allowList, requests, keyUse }: AdminGuardOptions) {
  const { keys } = ctx;
  const nobody = (request: FastifyRequest, keyName: string | null = null): AdminCaller =>
    unauthenticatedCaller(request.ip, keyName);
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    // A request refused by frameworkErrors and then by this hook is checked once.
    if (requests.get(request) !== undefined) return;
    if (!allowList.allows(request.ip)) {
      request.log.warn({ ip: request.ip }, 'admin API request from an address outside adminApi.allowList');
      requests.set(request, {
        caller: nobody(request),
        detail: `source address ${request.ip} not in adminApi.allowList`,
      });
      await sendError(reply, 403, 'source address not allowed');
      return;
    }
    const header = request.headers.authorization;
    const token =
      typeof header === 'string' && header.startsWith(BEARER_PREFIX) ? header.slice(BEARER_PREFIX.length) : null;
    if (token?.startsWith(ADMIN_KEY_PREFIX) === true) {
      const check = await checkAdminKey(ctx, token);
      if (!check.valid) {
        requests.set(request, { caller: nobody(request, check.keyName), detail: check.reason });
        await sendError(reply, 401, 'authentication required', UNAUTHENTICATED);
        return;
      }
      const { key } = check;
      const caller: AdminCaller = { kind: 'admin-key', key: callerKeyOf(key), sourceAddress: request.ip };
      // The key's own allow-list applies in addition to adminApi.allowList.
      if (key.allowList !== null && !new AddressAllowList(key.allowList).allows(request.ip)) {
        const message = `source address ${request.ip} is not allowed for key "${key.name}"`;
        requests.set(request, { caller, detail: message });
        await sendError(reply, 403, message);
        return;
      }
      requests.set(request, { caller });
      // "Last used" is bookkeeping: it never delays or fails the call.
      keyUse
        .note(key, request.ip)
        .catch((error: unknown) =>
          request.log.warn({ err: error, key: key.name }, 'could not note the use of an admin key'),
        );
      return;
    }
    if (!keys.adminApiEnabled()) {
      await sendError(reply, 503, 'admin API disabled: run "vpn-portal generate-secrets --admin-api" to enable it');
      return;
    }
    if (token === null || !keys.adminApiKeyMatches(token)) {
      requests.set(request, { caller: nobody(request), detail: token === null ? 'no Bearer token' : 'wrong secret' });
      await sendError(reply, 401, 'authentication required', UNAUTHENTICATED);
      return;
    }
    requests.set(request, { caller: { kind: 'secret', sourceAddress: request.ip } });
  };
}
