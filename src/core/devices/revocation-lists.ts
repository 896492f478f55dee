// The revocation lists of certificate enrollment kept fresh (issue 23, items 3 and 4): files, or
// http(s) URLs such as a CA's distribution point, read every crlRefresh; a list that fails keeps
// its last good one and is logged once. After each refresh the devices bound to a revoked
// certificate are retired. A device concern, not an HTTP one: the enrollment listeners only
// read the lists this keeps in the verifier they share.
import { readFile } from 'node:fs/promises';
import type { ClientCertificateConfig } from '../../config/portal-config.js';
import type { ClientCertificateVerifier } from '../../keys/client-certificate.js';
import { messageOf } from '../../shared/error-message.js';
import type { PortalContext } from '../context.js';
import { retireDevicesOfRevokedCertificates } from './revoked-certificates.js';

export interface RevocationListState {
  /** The file or URL, as configured (resolved). */
  readonly file: string;
  /** When the list in use was made (its thisUpdate); null until one was read. */
  readonly thisUpdate: Date | null;
  readonly entries: number;
  /** The last attempt to read this list failed (the one in use is kept). */
  readonly failing: boolean;
  /** Why it failed, while it does. */
  readonly lastError: string | null;
}

/** A revocation list fetched over http(s) larger than this is refused. */
const MAX_CRL_BYTES = 20 * 1024 * 1024;

export class RevocationListRefresher {
  readonly #ctx: PortalContext;
  readonly #config: ClientCertificateConfig;
  readonly #verifier: ClientCertificateVerifier;
  #timer: NodeJS.Timeout | undefined;
  /** Per list: why its last reading failed; null while it reads. */
  readonly #errors: (string | null)[];
  #refreshing: Promise<void> | null = null;

  constructor(ctx: PortalContext, config: ClientCertificateConfig, verifier: ClientCertificateVerifier) {
    this.#ctx = ctx;
    this.#config = config;
    this.#verifier = verifier;
    this.#errors = config.crlSources.map(() => null);
  }

  /** Reads the lists now (a URL's first fetch, and devices revoked while the portal was down), then every crlRefresh. */
  start(): void {
    if (this.#config.crlSources.length === 0) return;
    void this.refresh();
    this.#timer = setInterval(() => void this.refresh(), this.#config.crlRefreshMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#refreshing;
  }

  /** Each revocation list as last read, for the metrics. */
  states(): RevocationListState[] {
    const summary = this.#verifier.crlSummary;
    return this.#config.crlSources.map((source, index) => ({
      file: source.location,
      thisUpdate: summary[index]?.thisUpdate ?? null,
      entries: summary[index]?.entries ?? 0,
      failing: this.#errors[index] !== null,
      lastError: this.#errors[index] ?? null,
    }));
  }

  /**
   * Reads every list again (one that fails keeps its last good one, logged once until it reads
   * again), then retires the live devices bound to a certificate the lists revoke. A list that
   * cannot be read never retires anything by itself: only what a good list names counts.
   */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#refresh().finally(() => {
      this.#refreshing = null;
    });
    return this.#refreshing;
  }

  async #refresh(): Promise<void> {
    await Promise.all(
      this.#config.crlSources.map(async (source, index) => {
        try {
          await this.#verifier.replaceCrl(
            index,
            source.kind === 'file' ? await readFile(source.location) : await fetchCrl(source.location),
          );
          if (this.#errors[index] !== null)
            this.#ctx.logger.info({ crl: source.location }, 'certificate revocation list read again');
          this.#errors[index] = null;
        } catch (error) {
          if (this.#errors[index] === null) {
            this.#ctx.logger.error(
              { err: error, crl: source.location },
              'a certificate revocation list cannot be read; the last good one stays in use',
            );
          }
          this.#errors[index] = messageOf(error);
        }
      }),
    );
    try {
      await retireDevicesOfRevokedCertificates(this.#ctx, this.#verifier.revoked);
    } catch (error) {
      this.#ctx.logger.error(
        { err: error },
        'devices with revoked certificates could not be looked up; tried again at the next refresh',
      );
    }
  }
}

/** A revocation list from an http(s) URL: 200 within 30 s, at most MAX_CRL_BYTES. */
async function fetchCrl(url: string): Promise<Buffer> {
  const response = await fetch(url, { signal: AbortSignal.timeout(30_000), redirect: 'follow' });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  const length = Number(response.headers.get('content-length') ?? 0);
  if (length > MAX_CRL_BYTES) throw new Error(`${url} is larger than ${MAX_CRL_BYTES} bytes`);
  const body = Buffer.from(await response.arrayBuffer());
  if (body.length > MAX_CRL_BYTES) throw new Error(`${url} is larger than ${MAX_CRL_BYTES} bytes`);
  return body;
}
