// Metrics fed by the events seam (src/core/events.ts): sessions that started and ended, devices
// suspended, and reconcile passes (their duration, the corrections they made, the last one that reached each
// node). After-commit: a metric follows only what really happened.
import { suspensionReasonLabel } from '../core/devices/index.js';
import type { PortalEvents } from '../core/events.js';
import type { PortalMetrics } from '../metrics/portal-metrics.js';

export function recordMetrics(events: PortalEvents, metrics: PortalMetrics): void {
  events.afterCommit((event) => {
    switch (event.type) {
      case 'session.started': {
        metrics.sessionStarted(event.configuration.nodeNumber, event.configuration.vpnProto);
        break;
      }
      case 'session.ended': {
        metrics.sessionEnded(event.nodeNumber, event.vpnProto);
        break;
      }
      case 'reconcile.finished': {
        const node = String(event.nodeNumber);
        metrics.reconcileDuration.observe({ node }, event.durationMs / 1000);
        if (!event.reachable) break;
        metrics.reconcileCorrections.inc({ node, kind: 'added' }, event.added);
        metrics.reconcileCorrections.inc({ node, kind: 'removed' }, event.removed);
        metrics.reconcileCorrections.inc({ node, kind: 'disconnected' }, event.disconnected);
        metrics.lastReconcileSuccess.set({ node }, event.at.getTime() / 1000);
        metrics.lastSuccessMs.set(event.nodeNumber, event.at.getTime());
        break;
      }
      case 'device.suspended': {
        metrics.deviceSuspensions.inc({ reason: suspensionReasonLabel(event.reason) });
        break;
      }
      // Counted at scrape time from the database (src/metrics/portal-metrics.ts), or not counted at all.
      case 'user.created':
      case 'user.disabled':
      case 'user.enabled':
      case 'user.destroyed':
      case 'authorizations.deleted':
      case 'admin.call':
      case 'configuration.created':
      case 'configuration.extended':
      case 'configuration.deleted':
      case 'configuration.expired':
      case 'configuration.expiring':
      case 'enrollment_token.created':
      case 'enrollment_token.revoked':
      case 'node.down':
      case 'node.up':
      case 'node.nat_changed':
      case 'webhook.created':
      case 'webhook.deleted':
      case 'webhook.secret_rotated':
      case 'admin_key.created':
      case 'admin_key.rotated':
      case 'admin_key.revoked':
      case 'legal_hold.created':
      case 'legal_hold.released':
      case 'scim.changed':
      case 'revocation.applied':
      case 'revocation.overdue':
      case 'device.registered':
      case 'device.enrolled':
      case 'device.replaced':
      case 'device.retired':
      case 'device.resumed':
        break;
      default:
        // A new event type fails the type check here until it is counted or listed above.
        event satisfies never;
    }
  });
}
