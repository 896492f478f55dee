// Encrypts what must be kept for a while but never stored readable: the first answer of a
// `create` sent with an Idempotency-Key holds the client's private key, and is given again to
// a retry within 24 hours. AES-256-GCM with a random 96-bit nonce per message; the key is a
// file in DATA/keys (0600), so a copy of the database alone reveals nothing.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Stored text: `v1.` + Base64 of nonce ‖ tag ‖ ciphertext. */
const VERSION = 'v1.';

export class AnswerCipher {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the answer key must be 32 bytes');
    this.#key = key;
  }

  /** `context` (e.g. the key name and Idempotency-Key) is authenticated: a sealed text moved to another row does not open. */
  seal(plaintext: string, context: string): string {
    const nonce = randomBytes(NONCE_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${VERSION}${Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** The plaintext, or null when the text was sealed under another key or context, or was altered. */
  open(sealed: string, context: string): string | null {
    if (!sealed.startsWith(VERSION)) return null;
    const raw = Buffer.from(sealed.slice(VERSION.length), 'base64');
    if (raw.length < NONCE_BYTES + TAG_BYTES) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, NONCE_BYTES));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      decipher.setAuthTag(raw.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}
