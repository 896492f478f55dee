// Runs before anything else on an Admin API request, in this order: the source address
// must be on the allow-list (403), the API must be enabled by its key file (503), and the
// Bearer token must match it (401, compared in constant time). Routing comes after, so an
// unauthenticated client learns nothing about which paths exist.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { KeyStore } from '../keys/key-store.js';
import type { AddressAllowList } from './address-allow-list.js';
import { sendError } from './error-reply.js';

const BEARER_PREFIX = 'Bearer ';

export function adminGuard(allowList: AddressAllowList, keys: KeyStore) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (!allowList.allows(request.ip)) {
      request.log.warn({ ip: request.ip }, 'admin API request from an address outside adminApi.allowList');
      await sendError(reply, 403, 'source address not allowed');
      return;
    }
    if (!keys.adminApiEnabled()) {
      await sendError(reply, 503, 'admin API disabled: run "vpn-portal generate-secrets --admin-api" to enable it');
      return;
    }
    const header = request.headers.authorization;
    const token = typeof header === 'string' && header.startsWith(BEARER_PREFIX) ? header.slice(BEARER_PREFIX.length) : null;
    if (token === null || !keys.adminApiKeyMatches(token)) {
      await sendError(reply, 401, 'authentication required', { 'www-authenticate': 'Bearer realm="Admin API"' });
    }
  };
}
