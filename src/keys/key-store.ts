// Secrets on disk, under DATA/keys: the Admin API secret, one secret per node, one
// WireGuard private key per node, the pepper of the admin keys' stored hashes, the key that
// encrypts answers kept for retries (Idempotency-Key) and the key that seals webhook signing secrets. Files are 0600 in a 0700 directory, are created only when
// missing (never overwritten), and their contents are never logged.
import { createHmac, randomBytes } from 'node:crypto';
import { constantTimeEquals, constantTimeMatcher } from '../shared/constant-time.js';
import { elapsedSince, monotonicNow, type MonotonicMs } from '../shared/monotonic.js';
import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { NodeNumber, WireGuardKey } from '../shared/ids.js';
import { generateWireGuardKeyPair, isWireGuardKey, wireGuardPublicKey } from '../wireguard/keys.js';
import { createFileOnce } from './whole-files.js';

export type CreatedOrKept = { readonly path: string; readonly created: boolean };

/** A key file compared with content brought from elsewhere (an eduVPN server): absent, the same, or another key. */
export type KeyFileState = 'missing' | 'same' | 'differs';

/** A key file that exists with other content than the one to adopt: it is never overwritten. */
export class KeyFileDiffers extends Error {
  override readonly name = 'KeyFileDiffers';
  constructor(readonly path: string) {
    super(`${path} exists and holds another key: it is kept, not overwritten`);
  }
}

/** The state of `file` against `content`, both trimmed, compared in constant time. */
export function keyFileState(file: string, content: string): KeyFileState {
  let existing: string;
  try {
    existing = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw error;
  }
  return constantTimeEquals(existing.trim(), content.trim()) ? 'same' : 'differs';
}

/**
 * Key files are re-read at most this often, so a replaced key takes effect within a second (a new
 * one at once). On the monotonic clock: the wall clock set back must not keep a replaced key valid.
 */
const REREAD_AFTER_MS = 1_000;

export class KeyStore {
  private readonly publicKeyCache = new Map<string, WireGuardKey>();
  private readonly fileCache = new Map<string, { readonly content: string | null; readonly readAt: MonotonicMs }>();
  /** Per key file, its secret's matcher (the secret hashed once), made again when the file's secret changes. */
  private readonly matchers = new Map<
    string,
    { readonly secret: string; readonly matches: (presented: string) => boolean }
  >();

  constructor(readonly keyDir: string) {}

  get adminApiKeyPath(): string {
    return path.join(this.keyDir, 'admin-api.key');
  }

  /** The HMAC key of admin keys' stored hashes: every portal instance on one database needs the same file. */
  get adminKeyPepperPath(): string {
    return path.join(this.keyDir, 'admin-keys.pepper');
  }

  /** The AES-256-GCM key of answers kept for retries: every portal instance on one database needs the same file. */
  get answerKeyPath(): string {
    return path.join(this.keyDir, 'idempotency.key');
  }

  /** The AES-256-GCM key that seals webhook signing secrets: every portal instance on one database needs the same file. */
  get webhookKeyPath(): string {
    return path.join(this.keyDir, 'webhooks.key');
  }

  nodeKeyPath(nodeNumber: NodeNumber): string {
    return path.join(this.keyDir, `node.${nodeNumber}.key`);
  }

  wireGuardKeyPath(nodeNumber: NodeNumber): string {
    return path.join(this.keyDir, `wireguard.${nodeNumber}.key`);
  }

  /** 64 lowercase hex characters (32 random bytes), as the reference's generate-secrets. */
  createAdminApiKey(): CreatedOrKept {
    return this.createIfMissing(this.adminApiKeyPath, () => randomBytes(32).toString('hex'));
  }

  /** 32 random bytes as 64 hex characters. */
  createAdminKeyPepper(): CreatedOrKept {
    return this.createIfMissing(this.adminKeyPepperPath, () => randomBytes(32).toString('hex'));
  }

  /** 32 random bytes as 64 hex characters. */
  createAnswerKey(): CreatedOrKept {
    return this.createIfMissing(this.answerKeyPath, () => randomBytes(32).toString('hex'));
  }

  /** 32 random bytes as 64 hex characters. */
  createWebhookKey(): CreatedOrKept {
    return this.createIfMissing(this.webhookKeyPath, () => randomBytes(32).toString('hex'));
  }

  webhookKey(): Buffer | null {
    return this.readBytes(this.webhookKeyPath);
  }

  adminKeyPepper(): Buffer | null {
    return this.readBytes(this.adminKeyPepperPath);
  }

  answerKey(): Buffer | null {
    return this.readBytes(this.answerKeyPath);
  }

  createNodeKey(nodeNumber: NodeNumber): CreatedOrKept {
    return this.createIfMissing(this.nodeKeyPath(nodeNumber), () => randomBytes(32).toString('hex'));
  }

  createWireGuardKey(nodeNumber: NodeNumber): CreatedOrKept {
    return this.createIfMissing(this.wireGuardKeyPath(nodeNumber), () => generateWireGuardKeyPair().privateKey);
  }

  /** Writes the Admin API secret brought from elsewhere, unless the same one is there; throws KeyFileDiffers for another. */
  adoptAdminApiKey(content: string): CreatedOrKept {
    return this.adoptIfMissing(this.adminApiKeyPath, content);
  }

  adoptNodeKey(nodeNumber: NodeNumber, content: string): CreatedOrKept {
    return this.adoptIfMissing(this.nodeKeyPath(nodeNumber), content);
  }

  /** A node's WireGuard private key as the node had it (the portal hands it to its agent). */
  adoptWireGuardKey(nodeNumber: NodeNumber, privateKey: WireGuardKey): CreatedOrKept {
    if (!isWireGuardKey(privateKey)) throw new Error(`node ${nodeNumber}: not a WireGuard private key`);
    return this.adoptIfMissing(this.wireGuardKeyPath(nodeNumber), privateKey);
  }

  /** True when `presented` equals the Admin API secret; false when it differs or the API is disabled. */
  adminApiKeyMatches(presented: string): boolean {
    return this.secretMatches(this.adminApiKeyPath, presented);
  }

  /**
   * HMAC-SHA-256 of the Admin API secret under the admin key pepper (hex), null when the API is
   * disabled or there is no pepper: tells a console session whether the secret it signed in with
   * still holds. Keyed, so a copy of the database alone tests no guess of a secret an
   * administrator chose.
   */
  adminApiSecretDigest(): string | null {
    const secret = this.read(this.adminApiKeyPath);
    const pepper = this.adminKeyPepper();
    if (secret === null || pepper === null) return null;
    return createHmac('sha256', pepper).update(`console session\n${secret}`).digest('hex');
  }

  /**
   * What a console session of the admin key `keyId` keeps of the pepper its key was checked under
   * (HMAC-SHA-256 of the id under it): the key stops working with another pepper, and so does the
   * session. Null without a usable pepper.
   */
  adminKeySessionDigest(keyId: string): string | null {
    const pepper = this.adminKeyPepper();
    if (pepper === null) return null;
    return createHmac('sha256', pepper).update(`console session of admin key\n${keyId}`).digest('hex');
  }

  adminApiEnabled(): boolean {
    return this.read(this.adminApiKeyPath) !== null;
  }

  nodeKeyMatches(nodeNumber: NodeNumber, presented: string): boolean {
    return this.secretMatches(this.nodeKeyPath(nodeNumber), presented);
  }

  nodeSecret(nodeNumber: NodeNumber): string | null {
    return this.read(this.nodeKeyPath(nodeNumber));
  }

  wireGuardPrivateKey(nodeNumber: NodeNumber): WireGuardKey | null {
    const key = this.read(this.wireGuardKeyPath(nodeNumber));
    return key !== null && isWireGuardKey(key) ? key : null;
  }

  wireGuardPublicKey(nodeNumber: NodeNumber): WireGuardKey | null {
    const privateKey = this.wireGuardPrivateKey(nodeNumber);
    if (privateKey === null) return null;
    let publicKey = this.publicKeyCache.get(privateKey);
    if (publicKey === undefined) {
      publicKey = wireGuardPublicKey(privateKey);
      this.publicKeyCache.set(privateKey, publicKey);
    }
    return publicKey;
  }

  /** Key files whose content is held for re-reading: only files that exist, so at most the key files on disk. */
  get cachedFileCount(): number {
    return this.fileCache.size;
  }

  /** Whether `presented` is the secret in `file`, compared in constant time; false without one. */
  private secretMatches(file: string, presented: string): boolean {
    const secret = this.read(file);
    if (secret === null) return false;
    let matcher = this.matchers.get(file);
    if (matcher?.secret !== secret) {
      matcher = { secret, matches: constantTimeMatcher(secret) };
      this.matchers.set(file, matcher);
    }
    return matcher.matches(presented);
  }

  /** 32 bytes written as 64 hex characters; null when absent or not such a file. */
  private readBytes(file: string): Buffer | null {
    const text = this.read(file);
    return text !== null && /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : null;
  }

  /**
   * File content with surrounding whitespace (such as a trailing newline) removed; null when absent or empty.
   * An absent or empty file is not cached: callers may name any file (a node number from a
   * request), and remembering each would grow the cache without limit.
   */
  private read(file: string): string | null {
    const cached = this.fileCache.get(file);
    if (cached !== undefined && elapsedSince(cached.readAt) < REREAD_AFTER_MS) return cached.content;
    const readAt = monotonicNow();
    let content: string | null;
    try {
      content = readFileSync(file, 'utf8').trim() || null;
    } catch {
      content = null;
    }
    if (content === null) {
      this.fileCache.delete(file);
      this.matchers.delete(file);
    } else this.fileCache.set(file, { content, readAt });
    return content;
  }

  /** As createIfMissing with given content: an existing file with the same key is kept, another one refused. */
  private adoptIfMissing(file: string, content: string): CreatedOrKept {
    const result = this.createIfMissing(file, () => content.trim());
    if (!result.created && keyFileState(file, content) !== 'same') throw new KeyFileDiffers(file);
    return result;
  }

  private createIfMissing(file: string, make: () => string): CreatedOrKept {
    mkdirSync(this.keyDir, { recursive: true, mode: 0o700 });
    chmodSync(this.keyDir, 0o700);
    // Never over a file that exists, also not one a concurrent run made; and whole or not at all.
    const { created } = createFileOnce(file, make());
    if (created) this.fileCache.delete(file);
    return { path: file, created };
  }
}
