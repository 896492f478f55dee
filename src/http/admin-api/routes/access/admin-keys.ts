// The admin key calls (extensions): list, make and revoke admin keys over the Admin API, for
// the console's admin keys page and for tools. Scope admin; the rules, and the limits a key has
// when it makes or revokes another, are in src/core/access/admin-key-calls.ts.
import {
  adminKeyInfo,
  adminKeyListing,
  createAdminKeyForCaller,
  revokeAdminKeyForCaller,
} from '../../../../core/access/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { asProfileId } from '../../../../shared/ids.js';
import { formatAtom } from '../../../../shared/time.js';
import { defineRoute } from '../../admin-route.js';

export const adminKeysRoute = defineRoute({
  ...ADMIN_API_CALLS.adminKeys,
  summary: 'The admin keys: name, scope, profiles, allow-list, expiry, creation, last use, revocation (never a secret)',
  since: 'extension',
  source: 'query',
  answerDoc: 'Every key, by name, newest first within a name',
  async handle(ctx) {
    return { status: 200, json: { admin_keys: await adminKeyListing(ctx) } };
  },
});

export const createAdminKeyRoute = defineRoute({
  ...ADMIN_API_CALLS.createAdminKey,
  summary:
    'Makes an admin key, as `vpn-portal admin-key create` does; never with more scope, more profiles, a wider allow-list or a later expiry than the calling key',
  since: 'extension',
  source: 'post',
  answerDoc: 'The key and its secret, shown this once',
  // A retry gets the secret again only while the key is its name's current one.
  handsOut: { kind: 'admin-key', idIn: (answer) => answer.admin_key.key_id },
  async handle(ctx, params) {
    const { key, token } = await createAdminKeyForCaller(ctx, {
      name: params.name,
      scope: params.scope ?? 'read',
      profiles: params.profiles === undefined ? null : params.profiles.map(asProfileId),
      expiresIn: params.expires_in ?? null,
      allowList: params.allow_list ?? null,
    });
    return { status: 200, json: { admin_key: adminKeyInfo(key, formatAtom(ctx.clock.now())), secret: token } };
  },
});

export const revokeAdminKeyRoute = defineRoute({
  ...ADMIN_API_CALLS.revokeAdminKey,
  summary:
    'Revokes every key of a name at once, on every portal instance; a key revokes only keys within its own limits (itself too)',
  since: 'extension',
  source: 'post',
  answerDoc: 'How many keys of the name were revoked',
  async handle(ctx, { name }) {
    return { status: 200, json: { name, revoked: await revokeAdminKeyForCaller(ctx, name) } };
  },
});
