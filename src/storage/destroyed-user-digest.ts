// The digests `destroyed_users` keeps a destroyed user by (its id, and its id letter case
// aside), on their own so that migrations 0043 and 0066 use the very functions the queries do
// (src/storage/destroyed-users.ts) without an import cycle through the database module.
import { sha256Hex } from '../shared/sha256.js';
import { scimNameKey } from './scim-name-key.js';

/**
 * SHA-256 of the user id behind a prefix of this portal's, so that it matches no list of digests
 * made elsewhere (a bare SHA-256 of an e-mail address does).
 */
export function destroyedUserDigest(userId: string): string {
  return sha256Hex(`vpn-portal destroyed user\n${userId}`);
}

/**
 * The digest of the user id letter case aside (lower-cased as SCIM compares userNames), behind a
 * prefix of its own: `Alice@Example.org` and `alice@example.org` have one, which no exact digest is.
 */
export function destroyedUserNameKeyDigest(userId: string): string {
  return sha256Hex(`vpn-portal destroyed user name key\n${scimNameKey(userId)}`);
}
