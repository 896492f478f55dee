// Writes revocation receipts (src/core/revocations/receipts.ts) in the transaction of the change that
// revokes: from the events it announced (user.disabled or device.suspended with its
// configurations, or configuration.deleted/expired, each naming its receipt), once per change, so
// a receipt exists exactly when the revocation committed. An enable_user supersedes the user's
// receipts still waiting for a node, a resumed device its suspension's. Use cases only pick the receipt's id (they answer it in a header).
import type { ConfigurationRef, PortalEvent, PortalEvents } from '../core/events.js';
import { appendAll } from '../shared/append-all.js';
import { formatAtom } from '../shared/time.js';
import type { RevocationId, UserId } from '../shared/ids.js';
import type { ClosingWrite } from '../storage/closing-writes.js';
import { supersedeRevocation, supersedeRevocationsOfUser, type RevocationReason } from '../storage/revocations.js';

interface ReceiptDraft {
  readonly userId: UserId;
  readonly at: Date;
  reason: RevocationReason;
  readonly configurations: ConfigurationRef[];
}

export function writeRevocationReceipts(events: PortalEvents): void {
  events.inTransaction(async (event, db) => {
    if (event.type === 'user.enabled') await supersedeRevocationsOfUser(db, event.userId, formatAtom(event.at));
    if (event.type === 'device.resumed' && event.supersedes !== null)
      await supersedeRevocation(db, event.supersedes, formatAtom(event.at));
  });
  // A closing listener: it sees every event of the change at once (destroy announces each
  // configuration, then the user), so one receipt holds them all.
  events.closing((announced) =>
    [...draftsOf(announced)].map(
      ([revocationId, draft]): ClosingWrite => ({
        kind: 'revocation-receipt',
        revocation: { revocationId, userId: draft.userId, reason: draft.reason, requestedAt: formatAtom(draft.at) },
        nodes: draft.configurations.map((configuration) => ({
          revocationId,
          nodeNumber: configuration.nodeNumber,
          connectionId: configuration.connectionId,
          vpnProto: configuration.vpnProto,
          profileId: configuration.profileId,
        })),
      }),
    ),
  );
}

function draftsOf(announced: readonly PortalEvent[]): Map<RevocationId, ReceiptDraft> {
  const drafts = new Map<RevocationId, ReceiptDraft>();
  const draft = (revocationId: RevocationId, userId: UserId, at: Date, reason: RevocationReason): ReceiptDraft => {
    const found = drafts.get(revocationId) ?? { userId, at, reason, configurations: [] };
    drafts.set(revocationId, found);
    return found;
  };
  for (const event of announced) {
    switch (event.type) {
      case 'user.disabled':
        appendAll(
          draft(event.revocationId, event.userId, event.at, 'disable_user').configurations,
          event.configurations,
        );
        break;
      case 'device.suspended':
        if (event.revocationId !== null)
          appendAll(
            draft(event.revocationId, event.device.userId, event.at, 'suspend_device').configurations,
            event.configurations,
          );
        break;
      case 'user.destroyed':
        draft(event.revocationId, event.userId, event.at, 'destroy').reason = 'destroy';
        break;
      case 'configuration.deleted':
      case 'configuration.expired':
        draft(
          event.revocationId,
          event.configuration.userId,
          event.at,
          event.type === 'configuration.expired' ? 'expiry' : 'delete_connection',
        ).configurations.push(event.configuration);
        break;
      default:
        break;
    }
  }
  // A device's configurations are deleted as configurations; the device event says why.
  const deviceReason = announced.some((event) => event.type === 'device.retired')
    ? 'retire_device'
    : announced.some((event) => event.type === 'device.replaced')
      ? 'replaced'
      : null;
  if (deviceReason !== null)
    for (const found of drafts.values()) if (found.reason === 'delete_connection') found.reason = deviceReason;
  return drafts;
}
