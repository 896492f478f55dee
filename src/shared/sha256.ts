// SHA-256 as the portal writes it everywhere it names something by a digest (stored hashes,
// fingerprints, pins, bucket keys): lowercase hex of the UTF-8 text or of the bytes given.
import { createHash } from 'node:crypto';

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}
