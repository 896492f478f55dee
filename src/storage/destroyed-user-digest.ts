// The digest `destroyed_users` keeps a destroyed user by, on its own so that migration 0043 uses
// the very function the queries do (src/storage/destroyed-users.ts) without an import cycle
// through the database module.
import { sha256Hex } from '../shared/sha256.js';

/**
 * SHA-256 of the user id behind a prefix of this portal's, so that it matches no list of digests
 * made elsewhere (a bare SHA-256 of an e-mail address does).
 */
export function destroyedUserDigest(userId: string): string {
  return sha256Hex(`vpn-portal destroyed user\n${userId}`);
}
