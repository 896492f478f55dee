// OpenVPN secrets on disk, under the portal's key directory (DATA/keys): the CA (ca/ca.crt,
// ca/ca.key), one tls-crypt key per profile, and the server certificate of every
// (node, profile) pair. Files are 0600 in 0700 directories, like the other keys (src/keys).
//
// Several portal processes may share the directory, so every file appears atomically:
// written under a temporary name first, then linked (never overwriting) or renamed (when
// replacing on purpose) to its final name. A reader never sees half a file.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  CertificateAuthority,
  type CertificateSummary,
  type IssuedCredentials,
  keyMatchesCertificate,
  summarizeCertificate,
} from './certificate-authority.js';
import { generateTlsCryptKey, isTlsCryptKey } from './tls-crypt.js';
import { KeyFileDiffers, keyFileState, type KeyFileState } from '../keys/key-store.js';
import { createFileOnce, replaceFileWhole } from '../keys/whole-files.js';
import { elapsedSince, monotonicNow, type MonotonicMs } from '../shared/monotonic.js';

/**
 * Files are re-checked at most this often, so a replaced CA or key takes effect within a second.
 * On the monotonic clock: the wall clock set back must not keep a replaced one in use.
 */
const RECHECK_AFTER_MS = 1_000;
/** A stored server certificate this close to its end is replaced. */
const SERVER_RENEW_BEFORE_MS = 30 * 24 * 60 * 60 * 1000;
/** reference §2.1; checked again here because the id becomes part of file names. */
const PROFILE_ID = /^[a-zA-Z0-9-.]+$/;

interface CachedCa {
  checkedAt: MonotonicMs;
  /** Identity of the two files when they were read (inode, size, mtime). */
  readonly stamp: string;
  readonly ca: Promise<CertificateAuthority | null>;
}

export class OpenVpnKeys {
  readonly caCertificatePath: string;
  readonly caKeyPath: string;
  readonly #caDir: string;
  #cachedCa: CachedCa | null = null;
  readonly #tlsCryptCache = new Map<string, { readonly content: string; readonly readAt: MonotonicMs }>();

  constructor(readonly keyDir: string) {
    this.#caDir = path.join(keyDir, 'ca');
    this.caCertificatePath = path.join(this.#caDir, 'ca.crt');
    this.caKeyPath = path.join(this.#caDir, 'ca.key');
  }

  /**
   * Makes the CA when neither of its files exists, as the reference's generate-secrets does.
   * Both files appear together: they are written into a fresh directory that is then renamed
   * to `ca/`, so no process ever sees a key without its certificate.
   */
  async createCa(now: Date, notAfter: Date): Promise<{ readonly path: string; readonly created: boolean }> {
    const result = { path: this.caCertificatePath };
    if (this.#caFilesPresent()) return { ...result, created: false };

    const made = await CertificateAuthority.create({ now, notAfter });
    ensurePrivateDir(this.keyDir);
    const staging = mkdtempSync(path.join(this.keyDir, '.ca-'));
    try {
      writeFileSync(path.join(staging, 'ca.key'), made.privateKeyPem, { mode: 0o600, flag: 'wx' });
      writeFileSync(path.join(staging, 'ca.crt'), made.certificatePem, { mode: 0o600, flag: 'wx' });
      try {
        // rename(2) replaces an empty directory but never a non-empty one.
        renameSync(staging, this.#caDir);
      } catch (error) {
        if (!isErrorCode(error, 'ENOTEMPTY', 'EEXIST')) throw error;
        // Someone else made the CA in the meantime: theirs stays.
        if (this.#caFilesPresent()) return { ...result, created: false };
        throw new Error(`cannot create the OpenVPN CA: ${this.#caDir} exists and holds other files`);
      }
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
    this.#cachedCa = null;
    return { ...result, created: true };
  }

  /** The CA files against a CA brought from elsewhere (an eduVPN server): absent, the same, or another CA. */
  caState(certificatePem: string, privateKeyPem: string): KeyFileState {
    if (!this.#caFilesPresent()) return 'missing';
    const certificate = keyFileState(this.caCertificatePath, certificatePem);
    const key = keyFileState(this.caKeyPath, privateKeyPem);
    return certificate === 'same' && key === 'same' ? 'same' : 'differs';
  }

  /**
   * Takes over a CA brought from elsewhere, so the client certificates it issued stay valid: both
   * files appear together, as with createCa. The same CA already here is kept; another one is
   * never replaced (KeyFileDiffers).
   */
  async adoptCa(
    certificatePem: string,
    privateKeyPem: string,
  ): Promise<{ readonly path: string; readonly created: boolean }> {
    const result = { path: this.caCertificatePath };
    const state = this.caState(certificatePem, privateKeyPem);
    if (state === 'same') return { ...result, created: false };
    if (state === 'differs') throw new KeyFileDiffers(this.caCertificatePath);
    // Unusable files stop here, before anything is written.
    await CertificateAuthority.load(certificatePem, privateKeyPem);
    ensurePrivateDir(this.keyDir);
    const staging = mkdtempSync(path.join(this.keyDir, '.ca-'));
    try {
      // PEM files end with a newline, whatever the reader left of it.
      writeFileSync(path.join(staging, 'ca.key'), `${privateKeyPem.trim()}\n`, { mode: 0o600, flag: 'wx' });
      writeFileSync(path.join(staging, 'ca.crt'), `${certificatePem.trim()}\n`, { mode: 0o600, flag: 'wx' });
      try {
        renameSync(staging, this.#caDir);
      } catch (error) {
        if (!isErrorCode(error, 'ENOTEMPTY', 'EEXIST')) throw error;
        if (this.caState(certificatePem, privateKeyPem) === 'same') return { ...result, created: false };
        throw new KeyFileDiffers(this.caCertificatePath);
      }
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
    this.#cachedCa = null;
    return { ...result, created: true };
  }

  tlsCryptKeyState(profileId: string, content: string): KeyFileState {
    return keyFileState(this.tlsCryptKeyPath(profileId), content);
  }

  /** Takes over a profile's tls-crypt key brought from elsewhere; the same key is kept, another one never replaced. */
  adoptTlsCryptKey(profileId: string, content: string): { readonly path: string; readonly created: boolean } {
    const file = this.tlsCryptKeyPath(profileId);
    if (!isTlsCryptKey(content))
      throw new Error(`the tls-crypt key of profile ${profileId} is not an OpenVPN static key`);
    const state = keyFileState(file, content);
    if (state === 'same') return { path: file, created: false };
    if (state === 'differs') throw new KeyFileDiffers(file);
    // Another process may have made the file meanwhile: theirs stays, and is compared.
    createOnce(file, content);
    if (keyFileState(file, content) !== 'same') throw new KeyFileDiffers(file);
    this.#tlsCryptCache.delete(file);
    return { path: file, created: true };
  }

  /** The CA, or null when it has not been made yet. Throws when its files are unusable. */
  async ca(): Promise<CertificateAuthority | null> {
    const now = monotonicNow();
    const cached = this.#cachedCa;
    if (cached !== null && elapsedSince(cached.checkedAt) < RECHECK_AFTER_MS) return cached.ca;

    const stamp = `${await fileStamp(this.caCertificatePath)}|${await fileStamp(this.caKeyPath)}`;
    if (cached !== null && cached.stamp === stamp) {
      cached.checkedAt = now;
      return cached.ca;
    }
    const ca = this.#loadCa();
    const entry: CachedCa = { checkedAt: now, stamp, ca };
    this.#cachedCa = entry;
    // A failed read is not remembered: the next call tries again.
    ca.catch(() => {
      if (this.#cachedCa === entry) this.#cachedCa = null;
    });
    return ca;
  }

  tlsCryptKeyPath(profileId: string): string {
    return path.join(this.keyDir, safeFileName(`tls-crypt-${checkedProfileId(profileId)}.key`));
  }

  /** The profile's tls-crypt key (reference §8.2), made on first use. */
  tlsCryptKey(profileId: string): string {
    const file = this.tlsCryptKeyPath(profileId);
    const now = monotonicNow();
    const cached = this.#tlsCryptCache.get(file);
    if (cached !== undefined && elapsedSince(cached.readAt) < RECHECK_AFTER_MS) return cached.content;

    const text = readIfPresent(file) ?? createOnce(file, generateTlsCryptKey());
    if (!isTlsCryptKey(text))
      throw new Error(`${file} is not an OpenVPN static key (as "openvpn --genkey secret" writes)`);
    // `openvpn --genkey` ends the file with a newline; the key is inlined without it.
    const content = text.trimEnd();
    this.#tlsCryptCache.set(file, { content, readAt: now });
    return content;
  }

  serverCredentialPaths(nodeNumber: number, profileId: string): { readonly certificate: string; readonly key: string } {
    if (!Number.isSafeInteger(nodeNumber) || nodeNumber < 0) throw new Error(`invalid node number ${nodeNumber}`);
    const base = `${checkedProfileId(profileId)}.${nodeNumber}`;
    const dir = path.join(this.keyDir, 'openvpn-server');
    return {
      certificate: path.join(dir, safeFileName(`${base}.crt`)),
      key: path.join(dir, safeFileName(`${base}.key`)),
    };
  }

  /**
   * The server certificate and key of a node for a profile. Kept on disk so the node gets the
   * same files on every request (and restarts no OpenVPN process for nothing); replaced when
   * the host name changed, the CA changed, or the certificate ends within 30 days.
   */
  async serverCredentials(
    nodeNumber: number,
    profileId: string,
    hostName: string,
    now: Date,
  ): Promise<IssuedCredentials> {
    const ca = await this.ca();
    if (ca === null) throw new Error('there is no OpenVPN CA yet: run "vpn-portal generate-secrets"');
    const files = this.serverCredentialPaths(nodeNumber, profileId);

    const stored = readServerCredentials(files.certificate, files.key);
    if (stored !== null) {
      const { summary, credentials } = stored;
      // Near its end a certificate is replaced, unless the CA ends just as soon: a new one
      // would not last longer, and replacing it on every request only restarts OpenVPN.
      const endsSoon =
        summary.notAfter.getTime() - now.getTime() <= SERVER_RENEW_BEFORE_MS &&
        summary.notAfter.getTime() < ca.notAfter.getTime();
      const stillGood =
        summary.commonName === hostName &&
        summary.organizationalUnit === profileId &&
        !endsSoon &&
        keyMatchesCertificate(credentials.certificatePem, credentials.privateKeyPem) &&
        (await ca.hasIssued(credentials.certificatePem));
      if (stillGood) return credentials;
    }

    const issued = await ca.issueServer({ hostName, profileId, now });
    ensurePrivateDir(this.keyDir);
    ensurePrivateDir(path.dirname(files.certificate));
    // Two renames are not one atomic step: a reader in between sees a new key with the old
    // certificate, finds that they do not match, and issues its own pair, which is harmless.
    replaceFileWhole(files.key, issued.privateKeyPem);
    replaceFileWhole(files.certificate, issued.certificatePem);
    return issued;
  }

  #caFilesPresent(): boolean {
    const certificate = exists(this.caCertificatePath);
    const key = exists(this.caKeyPath);
    if (certificate !== key) {
      const [present, missing] = certificate
        ? [this.caCertificatePath, this.caKeyPath]
        : [this.caKeyPath, this.caCertificatePath];
      throw new Error(
        `the OpenVPN CA is incomplete: ${present} exists but ${missing} does not; restore the missing file, or remove ${present} to make a new CA (every issued OpenVPN configuration then stops working)`,
      );
    }
    return certificate;
  }

  async #loadCa(): Promise<CertificateAuthority | null> {
    if (!this.#caFilesPresent()) return null;
    const [certificatePem, privateKeyPem] = await Promise.all([
      readFile(this.caCertificatePath, 'utf8'),
      readFile(this.caKeyPath, 'utf8'),
    ]);
    try {
      return await CertificateAuthority.load(certificatePem, privateKeyPem);
    } catch (error) {
      throw new Error(
        `${this.caCertificatePath}, ${this.caKeyPath}: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
}

function checkedProfileId(profileId: string): string {
  if (!PROFILE_ID.test(profileId)) throw new Error(`invalid profile id "${profileId}": expected ${PROFILE_ID.source}`);
  return profileId;
}

/** A name that stays inside its directory, whatever went into it (the pattern above already ensures this). */
function safeFileName(name: string): string {
  if (name !== path.basename(name) || name === '.' || name === '..') throw new Error(`invalid file name "${name}"`);
  return name;
}

function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

function exists(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch (error) {
    if (isErrorCode(error, 'ENOENT')) return false;
    throw error;
  }
}

async function fileStamp(file: string): Promise<string> {
  try {
    const info = await stat(file, { bigint: true });
    return `${info.ino}:${info.size}:${info.mtimeNs}`;
  } catch (error) {
    if (isErrorCode(error, 'ENOENT')) return 'missing';
    throw error;
  }
}

function readIfPresent(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if (isErrorCode(error, 'ENOENT')) return null;
    throw error;
  }
}

/** Creates `file` whole in a private folder unless it exists; returns what the file holds afterwards (ours or theirs). */
function createOnce(file: string, content: string): string {
  ensurePrivateDir(path.dirname(file));
  return createFileOnce(file, content).content;
}

function readServerCredentials(
  certificateFile: string,
  keyFile: string,
): { summary: CertificateSummary; credentials: IssuedCredentials } | null {
  const certificatePem = readIfPresent(certificateFile)?.trim();
  const privateKeyPem = readIfPresent(keyFile)?.trim();
  if (certificatePem === undefined || privateKeyPem === undefined) return null;
  try {
    const summary = summarizeCertificate(certificatePem);
    return { summary, credentials: { certificatePem, privateKeyPem, notAfter: summary.notAfter } };
  } catch {
    // Unreadable: issue a new one.
    return null;
  }
}

function isErrorCode(error: unknown, ...codes: string[]): boolean {
  return error instanceof Error && codes.includes((error as NodeJS.ErrnoException).code ?? '');
}
