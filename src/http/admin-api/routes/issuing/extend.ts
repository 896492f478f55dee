// POST /extend (ours, not the specification's): renews a configuration without a new key
// (src/core/issuing/extend.ts). Scope write, as create.
import { extendConfiguration } from '../../../../core/issuing/index.js';
import { ADMIN_API_CALLS } from '../../../../protocol/admin-api.js';
import { formatAtom } from '../../../../shared/time.js';
import { defineRoute } from '../../admin-route.js';

export const extendRoute = defineRoute({
  ...ADMIN_API_CALLS.extend,
  summary: "Move a configuration's expiry without a new key",
  since: 'extension',
  source: 'post',
  answerDoc: 'The new expiry; for OpenVPN the new certificate for the same key',
  async handle(ctx, { user_id, connection_id, expires_in }) {
    const extended = await extendConfiguration(ctx, user_id, connection_id, expires_in);
    return {
      status: 200,
      json: {
        connection_id: extended.connectionId,
        vpn_proto: extended.vpnProto,
        expires_at: formatAtom(extended.expiresAt),
        certificate: extended.certificatePem,
      },
    };
  },
});
