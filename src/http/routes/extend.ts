// POST /extend (ours, not the specification's): renews a configuration without a new key
// (src/core/issuing/extend.ts). Scope write, as create.
import { extendConfiguration } from '../../core/issuing/index.js';
import { ADMIN_API_CALLS, extendAnswer } from '../../protocol/admin-api.js';
import { formatAtom } from '../../shared/time.js';
import { defineRoute } from '../admin-route.js';
import { optional, param, required, SESSION_EXPIRY_ALLOWED } from '../params.js';

export const extendRoute = defineRoute({
  ...ADMIN_API_CALLS.extend,
  summary: "Move a configuration's expiry without a new key",
  since: 'extension',
  source: 'post',
  params: {
    user_id: required(param.userId, 'the user owning the configuration'),
    connection_id: required(param.connectionId, 'WireGuard public key or OpenVPN certificate Common Name'),
    expires_in: optional(
      param.isoDuration,
      "ISO 8601 duration from now, as for create: `sessionExpiry` (the default) or an entry of `supportedSessionExpiry`; capped by the CA's end; never earlier than the current expiry",
      SESSION_EXPIRY_ALLOWED,
    ),
  },
  success: {
    status: 200,
    doc: { description: 'The new expiry; for OpenVPN the new certificate for the same key', schema: extendAnswer },
  },
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
