// Whether the configuration a kept `create` answer handed out (Idempotency-Key) may be handed out
// again: not once it is revoked. Read from the configuration itself when a retry comes, so the
// answer holds whatever dropped the kept answer or not yet: an expiry the reconcile pass has not
// swept (nothing is written when a configuration expires), a deletion by hand.
import { formatAtom } from '../../shared/time.js';
import { findCertificate } from '../../storage/certificates.js';
import { findUser } from '../../storage/users.js';
import { peersWithKeys } from '../../storage/wg-peers.js';
import type { PortalContext } from '../context.js';

/** Why a configuration may not be handed out again. */
export type RevokedConfiguration = 'deleted' | 'expired' | 'user-disabled';

/** Why the configuration `connectionId` (a WireGuard public key or an OpenVPN Common Name) is revoked; null while it holds. */
export async function revocationOfConfiguration(
  ctx: PortalContext,
  connectionId: string,
): Promise<RevokedConfiguration | null> {
  const [peer] = await peersWithKeys(ctx.db, [connectionId]);
  const stored = peer ?? (await findCertificate(ctx.db, connectionId));
  if (stored === undefined) return 'deleted';
  if (stored.expiresAt <= formatAtom(ctx.clock.now())) return 'expired';
  const user = await findUser(ctx.db, stored.userId);
  if (user === undefined) return 'deleted';
  return user.isDisabled ? 'user-disabled' : null;
}
