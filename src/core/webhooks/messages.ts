// What a webhook receiver hears of an event of the seam: its type and `data` (the body's shape
// is src/protocol/webhooks.ts). Only what the event says about users, configurations, devices,
// sessions and nodes; never a private key, a configuration file or a secret, which no event carries.
import type { WebhookMessage } from '../../protocol/webhooks.js';
import { formatAtom } from '../../shared/time.js';
import { deviceWireFields } from '../devices/index.js';
import type { ConfigurationRef, PortalEvent } from '../events.js';

/** The message for a receiver, or null for events that are not sent (reconcile passes, Admin API calls, …). */
export function webhookMessageOf(event: PortalEvent): WebhookMessage | null {
  switch (event.type) {
    case 'user.created':
    case 'user.disabled':
    case 'user.enabled':
    case 'user.destroyed':
      return { type: event.type, data: { user_id: event.userId } };
    case 'configuration.created':
    case 'configuration.expiring':
      return {
        type: event.type,
        data: { ...configurationData(event.configuration), expires_at: formatAtom(event.expiresAt) },
      };
    case 'configuration.deleted':
    case 'configuration.expired':
      return { type: event.type, data: configurationData(event.configuration) };
    case 'session.started':
      return {
        type: event.type,
        data: {
          ...configurationData(event.configuration),
          ip_four: event.ipFour,
          ip_six: event.ipSix,
          originating_ip: event.originatingIp,
        },
      };
    case 'session.ended':
      return {
        type: event.type,
        data: {
          connection_id: event.connectionId,
          vpn_proto: event.vpnProto,
          node_number: event.nodeNumber,
          bytes_in: event.bytesIn,
          bytes_out: event.bytesOut,
          user_id: event.session?.userId ?? null,
          profile_id: event.session?.profileId ?? null,
          ip_four: event.session?.ipFour ?? null,
          ip_six: event.session?.ipSix ?? null,
          originating_ip: event.session?.originatingIp ?? null,
        },
      };
    case 'node.down':
      return { type: event.type, data: { node_number: event.nodeNumber, reason: event.reason } };
    case 'node.up':
      return { type: event.type, data: { node_number: event.nodeNumber } };
    case 'node.nat_changed': {
      const settings = event.mapping.mode === 'deterministic' ? event.mapping.settings : null;
      return {
        type: event.type,
        data: {
          node_number: event.nodeNumber,
          applied_at: formatAtom(event.appliedAt),
          mode: event.mapping.mode,
          ranges: settings === null ? null : [...settings.ranges],
          public_addresses: settings === null ? null : [...settings.publicAddresses],
          ports_per_client: settings?.portsPerClient ?? null,
        },
      };
    }
    case 'revocation.applied':
    case 'revocation.overdue':
      return {
        type: event.type,
        data: {
          revocation_id: event.revocation.revocationId,
          user_id: event.revocation.userId,
          connection_ids: [...event.revocation.connectionIds],
          nodes: event.revocation.nodes.map((node) => ({
            node_number: node.nodeNumber,
            state: node.state,
            applied_at: node.appliedAt,
          })),
        },
      };
    // Not sent: bookkeeping, the Admin API's own records, and changes to the subscriptions.
    case 'authorizations.deleted':
    case 'admin.call':
    case 'configuration.extended':
    case 'enrollment_token.created':
    case 'enrollment_token.revoked':
    case 'webhook.created':
    case 'webhook.deleted':
    case 'webhook.secret_rotated':
    case 'admin_key.created':
    case 'admin_key.rotated':
    case 'admin_key.revoked':
    case 'legal_hold.created':
    case 'legal_hold.released':
    case 'scim.changed':
    case 'reconcile.finished':
      return null;
    case 'device.registered':
    case 'device.retired':
      return { type: event.type, data: deviceWireFields(event.device) };
    case 'device.enrolled':
      return {
        type: event.type,
        data: { ...deviceWireFields(event.device), configuration: configurationData(event.configuration) },
      };
    case 'device.replaced':
      return {
        type: event.type,
        data: {
          ...deviceWireFields(event.device),
          configuration: configurationData(event.configuration),
          replaced: event.replaced.map(configurationData),
        },
      };
    case 'device.suspended':
      return {
        type: event.type,
        data: {
          ...deviceWireFields(event.device),
          reason: event.reason,
          by: event.by,
          revocation_id: event.revocationId,
        },
      };
    case 'device.resumed':
      return { type: event.type, data: { ...deviceWireFields(event.device), reason: event.reason, by: event.by } };
    default:
      // A new event type fails the type check here until it is sent or listed above.
      event satisfies never;
      return null;
  }
}

/** The body every subscription gets for one event, the same at every attempt: `{id, type, at, data}`. */
export function webhookBody(eventId: string, at: Date, message: WebhookMessage): string {
  return JSON.stringify({ id: eventId, type: message.type, at: formatAtom(at), data: message.data });
}

function configurationData(configuration: ConfigurationRef) {
  return {
    user_id: configuration.userId,
    profile_id: configuration.profileId,
    connection_id: configuration.connectionId,
    vpn_proto: configuration.vpnProto,
    node_number: configuration.nodeNumber,
  };
}
