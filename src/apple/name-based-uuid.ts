// Name-based UUIDs (RFC 9562 §5.5, version 5: SHA-1): the same namespace and name always give
// the same UUID, so a configuration profile rendered twice for one configuration carries the
// same PayloadUUID, without storing anything.
import { createHash } from 'node:crypto';

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Upper-case, as Apple writes PayloadUUIDs in its own profiles. */
export function nameBasedUuid(namespace: string, name: string): string {
  if (!UUID_PATTERN.test(namespace)) throw new Error(`namespace "${namespace}" is not a UUID`);
  const digest = createHash('sha1')
    .update(Buffer.from(namespace.replaceAll('-', ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  const bytes = digest.subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50; // version 5
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80; // RFC variant
  const hex = bytes.toString('hex').toUpperCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
