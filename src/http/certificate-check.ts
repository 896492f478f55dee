// The check of device certificates for enrollment (issue 23, item 3), shared by the mutual-TLS
// listener (src/http/enroll-tls.ts) and the plain `{baseUrl}enroll` behind a TLS reverse proxy
// that forwards the verified certificate in a header (`enrollment.clientCertificate.header`,
// believed only from `enrollment.clientCertificate.trustedProxyList` with `verifiedHeader`
// SUCCESS, see src/http/enroll.ts). Either way the portal checks the chain itself.
// It keeps the revocation lists (files, or http(s) URLs): a file is read at start (one that
// cannot be parsed refuses the start), and every list every crlRefresh after; a list that fails
// keeps its last good one and is logged once. After each refresh the devices bound to a revoked
// certificate are retired (issue 23, item 4). A refused enrollment is in the audit log.
import { readFile } from 'node:fs/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ClientCertificateConfig } from '../config/portal-config.js';
import { retireDevicesOfRevokedCertificates } from '../core/devices/index.js';
import { enrollByCertificate } from '../core/enrollment/index.js';
import type { PortalContext } from '../core/context.js';
import { ClientCertificateVerifier } from '../keys/client-certificate.js';
import { messageOf } from '../shared/error-message.js';
import { sendError, statusOfPortalError } from './error-reply.js';
import { unauthenticatedCaller, type AdminCall } from '../core/admin-call.js';
import { recordAdminCall } from '../core/access/index.js';
import type { IssuedConfiguration } from '../core/issuing/index.js';
import { PortalError } from '../core/errors.js';
import { CERTIFICATE_ENROLL_PARAMS, ENROLL_PATH } from '../protocol/admin-api.js';
import { readParams } from './params.js';
import { configurationAnswer } from './routes/create.js';

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

export class CertificateCheck {
  readonly verifier: ClientCertificateVerifier;
  readonly config: ClientCertificateConfig;
  readonly #ctx: PortalContext;
  #timer: NodeJS.Timeout | undefined;
  /** Per list: why its last reading failed; null while it reads. */
  readonly #errors: (string | null)[];
  #refreshing: Promise<void> | null = null;

  /** Null when `enrollment.clientCertificate` is not set; throws, naming the option, when a trust anchor or revocation list cannot be parsed. */
  static fromConfig(ctx: PortalContext): CertificateCheck | null {
    const config = ctx.config.enrollment.clientCertificate;
    return config === null ? null : new CertificateCheck(ctx, config);
  }

  private constructor(ctx: PortalContext, config: ClientCertificateConfig) {
    this.#ctx = ctx;
    this.config = config;
    this.#errors = config.crlSources.map(() => null);
    const rule =
      config.deviceId.prefix === undefined
        ? { from: config.deviceId.from }
        : { from: config.deviceId.from, prefix: config.deviceId.prefix };
    try {
      this.verifier = new ClientCertificateVerifier(config.trustAnchors, [], rule, config.intuneTenantId);
    } catch (error) {
      throw new Error(`enrollment.clientCertificate.trustAnchors: not PEM certificates (${messageOf(error)})`);
    }
    try {
      // Files as read at start; a URL's list is fetched by the first refresh.
      this.verifier.replaceCrls(config.crlSources.map((source) => (source.kind === 'file' ? source.initial : null)));
    } catch (error) {
      throw new Error(`enrollment.clientCertificate.crl: not a PEM or DER revocation list (${messageOf(error)})`);
    }
  }

  /** Reads the lists now (a URL's first fetch, and devices revoked while the portal was down), then every crlRefresh. */
  start(): void {
    if (this.config.crlSources.length === 0) return;
    void this.refresh();
    this.#timer = setInterval(() => void this.refresh(), this.config.crlRefreshMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await this.#refreshing;
  }

  /** Each revocation list as last read, for the metrics. */
  revocationLists(): RevocationListState[] {
    const summary = this.verifier.crlSummary;
    return this.config.crlSources.map((source, index) => ({
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
      this.config.crlSources.map(async (source, index) => {
        try {
          await this.verifier.replaceCrl(
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
      await retireDevicesOfRevokedCertificates(this.#ctx, this.verifier.revoked);
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

/**
 * A refused certificate enrollment is in the audit log (call `enroll`, no key), as refused Admin
 * API calls are: who tried, from where, and why.
 */
export async function auditRefusal(
  ctx: PortalContext,
  sourceAddress: string,
  parameters: Record<string, string>,
  status: number,
  reason: string,
): Promise<void> {
  const call: AdminCall = {
    caller: unauthenticatedCaller(sourceAddress),
    name: ENROLL_PATH,
    parameters,
    successStatus: 200,
  };
  await recordAdminCall(ctx, call, status, reason);
}

/** Checks the presented chain (leaf first) and, when it passes, answers the device's configuration; 403 with the reason when not. */
export async function enrollWithCertificate(
  ctx: PortalContext,
  check: CertificateCheck,
  presented: readonly (string | Buffer)[],
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const verdict = await check.verifier.verify(presented, ctx.clock.now());
  if (!verdict.ok) {
    request.log.warn({ ip: request.ip, reason: verdict.reason }, 'certificate enrollment refused');
    await auditRefusal(ctx, request.ip, {}, 403, verdict.reason);
    await sendError(reply, 403, verdict.reason);
    return;
  }
  const params = readParams('post', request.body, CERTIFICATE_ENROLL_PARAMS);
  let issued: IssuedConfiguration;
  try {
    issued = await enrollByCertificate(ctx, {
      certificate: verdict.certificate,
      publicKey: params.public_key,
      csr: params.csr,
      preferTcp: params.prefer_tcp ?? false,
      accept: request.headers.accept,
      profileId: params.profile_id,
      platform: params.platform,
    });
  } catch (error) {
    // A certificate that names no registered device (403), or a device that says otherwise (409).
    if (error instanceof PortalError && (error.code === 'not-allowed' || error.code === 'conflict')) {
      await auditRefusal(
        ctx,
        request.ip,
        { device_id: verdict.certificate.deviceId },
        statusOfPortalError(error),
        error.message,
      );
    }
    throw error;
  }
  const answer = configurationAnswer(issued);
  await reply.code(200).headers(answer.headers).send(answer.body);
}
