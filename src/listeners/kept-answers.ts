// Drops the kept answers (Idempotency-Key, src/http/admin-api/idempotency.ts) that handed out what
// a change revokes or replaces, as the change's closing write, in its transaction: a private key
// or a secret that no longer serves is not kept a moment longer, and a retry with the key is
// refused (410). What ends what:
// - a configuration (`create`): deleted (delete_connection, destroy, a device retired or
//   replaced), expired, or taken off its nodes with its disabled user; replaced when extend
//   re-issues its OpenVPN certificate (the kept file holds the old one, which ends sooner);
// - an admin key (`create_admin_key`): revoked, or rotated (replaced);
// - a webhook's secret (`create_webhook`, `rotate_webhook_secret`): deleted with its
//   subscription, or replaced by a rotation (the rotation's own answer is kept after it commits);
// - an enrollment token (`enrollment_token`): revoked (by revoke_enrollment_token, disable_user,
//   retire_device), deleted with its user, or used up by the redemption that took its last use.
// A retry reads the state itself too (src/http/admin-api/hand-outs.ts), so an expiry, which no
// change announces, is refused as well.
import type { PortalEvent, PortalEvents } from '../core/events.js';
import type { ClosingWrite } from '../storage/closing-writes.js';
import { namedBy, type EndedHandOuts } from '../storage/idempotency.js';

export function dropRevokedKeptAnswers(events: PortalEvents): void {
  events.closing((announced) => keptAnswersDropped(announced.flatMap(endedBy)));
}

/**
 * One closing write per kind and end, each name once. The names are gathered in one set per
 * kind and end: a user destroyed with 150,000 configurations ends as many names.
 */
function keptAnswersDropped(ended: readonly EndedHandOuts[]): ClosingWrite[] {
  const merged = new Map<string, { readonly first: EndedHandOuts; readonly names: Set<string> }>();
  for (const entry of ended) {
    const key = `${entry.kind} ${entry.end}`;
    const found = merged.get(key) ?? { first: entry, names: new Set<string>() };
    merged.set(key, found);
    for (const name of namedBy(entry)) found.names.add(name);
  }
  return [...merged.values()].map(
    ({ first, names }): ClosingWrite => ({ kind: 'kept-answers-dropped', ended: withNames(first, [...names]) }),
  );
}

/** `ended` naming `names` instead of its own. */
function withNames(ended: EndedHandOuts, names: readonly string[]): EndedHandOuts {
  return ended.kind === 'admin-key' ? { ...ended, keyNames: names } : { ...ended, ids: names };
}

/** What an event ends of what kept answers hand out. A suspended device's configurations come back when it is resumed: not these. */
function endedBy(event: PortalEvent): EndedHandOuts[] {
  const configurations = (end: 'revoked' | 'replaced', ids: readonly string[]): EndedHandOuts[] =>
    ids.length === 0 ? [] : [{ kind: 'configuration', end, ids }];
  const tokens = (ids: readonly string[] | undefined): EndedHandOuts[] =>
    ids === undefined || ids.length === 0 ? [] : [{ kind: 'enrollment-token', end: 'revoked', ids }];
  switch (event.type) {
    case 'configuration.deleted':
    case 'configuration.expired':
      return configurations('revoked', [event.configuration.connectionId]);
    case 'configuration.extended':
      return event.configuration.vpnProto === 'openvpn'
        ? configurations('replaced', [event.configuration.connectionId])
        : [];
    case 'configuration.created':
      // Only a token left with no use loses its answer (the statement reads its uses).
      return tokens(event.enrollmentTokenId === undefined ? undefined : [event.enrollmentTokenId]);
    case 'user.disabled':
      return [
        ...configurations(
          'revoked',
          event.configurations.map((configuration) => configuration.connectionId),
        ),
        ...tokens(event.enrollmentTokenIds),
      ];
    case 'user.destroyed':
    case 'device.retired':
      return tokens(event.enrollmentTokenIds);
    case 'enrollment_token.revoked':
      return tokens([event.tokenId]);
    case 'admin_key.revoked':
      return [{ kind: 'admin-key', end: 'revoked', keyNames: [event.keyName] }];
    case 'admin_key.rotated':
      return [{ kind: 'admin-key', end: 'replaced', keyNames: [event.keyName] }];
    case 'webhook.deleted':
      return [{ kind: 'webhook-secret', end: 'revoked', ids: [event.webhookId] }];
    case 'webhook.secret_rotated':
      return [{ kind: 'webhook-secret', end: 'replaced', ids: [event.webhookId] }];
    default:
      return [];
  }
}
