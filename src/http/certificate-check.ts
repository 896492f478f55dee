// The check of device certificates for enrollment (issue 23, item 3), shared by the mutual-TLS
// listener (src/http/enroll-tls.ts) and the plain `{baseUrl}enroll` behind a TLS reverse proxy
// that forwards the verified certificate in a header (`enrollment.clientCertificate.header`,
// believed only from `adminApi.trustedProxyList`). Either way the portal checks the chain itself.
// It keeps the revocation lists: read at start (one that cannot be parsed refuses the start) and
// every crlRefresh after; a refresh that fails keeps the lists in use and is logged once. A
// refused enrollment is in the audit log.
import { readFile } from 'node:fs/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ClientCertificateConfig } from '../config/portal-config.js';
import { enrollByCertificate } from '../core/enrollment/index.js';
import type { PortalContext } from '../core/context.js';
import { ClientCertificateVerifier } from '../keys/client-certificate.js';
import { messageOf } from '../shared/error-message.js';
import { sendError, statusOfPortalError } from './error-reply.js';
import type { AdminCall } from '../core/admin-call.js';
import { recordAdminCall } from '../core/access/index.js';
import type { IssuedConfiguration } from '../core/issuing/index.js';
import { PortalError } from '../core/errors.js';
import { CERTIFICATE_ENROLL_PARAMS, ENROLL_PATH } from '../protocol/admin-api.js';
import { readParams } from './params.js';
import { configurationAnswer } from './routes/create.js';

export interface RevocationListState {
  readonly file: string;
  /** When the list in use was made (its thisUpdate). */
  readonly thisUpdate: Date | null;
  readonly entries: number;
  /** The last attempt to read the lists failed (the ones in use are kept). */
  readonly failing: boolean;
}

export class CertificateCheck {
  readonly verifier: ClientCertificateVerifier;
  readonly config: ClientCertificateConfig;
  readonly #ctx: PortalContext;
  #timer: NodeJS.Timeout | undefined;
  #failing = false;

  /** Null when `enrollment.clientCertificate` is not set; throws, naming the option, when a trust anchor or revocation list cannot be parsed. */
  static fromConfig(ctx: PortalContext): CertificateCheck | null {
    const config = ctx.config.enrollment.clientCertificate;
    return config === null ? null : new CertificateCheck(ctx, config);
  }

  private constructor(ctx: PortalContext, config: ClientCertificateConfig) {
    this.#ctx = ctx;
    this.config = config;
    const rule = config.deviceId.prefix === undefined ? { from: config.deviceId.from } : { from: config.deviceId.from, prefix: config.deviceId.prefix };
    try {
      this.verifier = new ClientCertificateVerifier(config.trustAnchors, [], rule, config.intuneTenantId);
    } catch (error) {
      throw new Error(`enrollment.clientCertificate.trustAnchors: not PEM certificates (${messageOf(error)})`);
    }
    try {
      this.verifier.replaceCrls(config.crls);
    } catch (error) {
      throw new Error(`enrollment.clientCertificate.crl: not a PEM or DER revocation list (${messageOf(error)})`);
    }
  }

  start(): void {
    if (this.config.crlFiles.length === 0) return;
    this.#timer = setInterval(() => void this.#reload(), this.config.crlRefreshMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Each revocation list file as last read, for the metrics. */
  revocationLists(): RevocationListState[] {
    const summary = this.verifier.crlSummary;
    return this.config.crlFiles.map((file, index) => ({
      file,
      thisUpdate: summary[index]?.thisUpdate ?? null,
      entries: summary[index]?.entries ?? 0,
      failing: this.#failing,
    }));
  }

  async #reload(): Promise<void> {
    try {
      this.verifier.replaceCrls(await Promise.all(this.config.crlFiles.map((file) => readFile(file))));
      if (this.#failing) this.#ctx.logger.info('certificate revocation lists read again');
      this.#failing = false;
    } catch (error) {
      if (!this.#failing) this.#ctx.logger.error({ err: error }, 'a certificate revocation list cannot be read; the last good ones stay in use');
      this.#failing = true;
    }
  }
}

/**
 * A refused certificate enrollment is in the audit log (call `enroll`, no key), as refused Admin
 * API calls are: who tried, from where, and why.
 */
async function auditRefusal(ctx: PortalContext, sourceAddress: string, parameters: Record<string, string>, status: number, reason: string): Promise<void> {
  const call: AdminCall = {
    caller: { keyName: null, keyId: null, keyLineage: null, scope: null, sourceAddress, profiles: null },
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
      await auditRefusal(ctx, request.ip, { device_id: verdict.certificate.deviceId }, statusOfPortalError(error), error.message);
    }
    throw error;
  }
  const answer = configurationAnswer(issued);
  await reply.code(200).headers(answer.headers).send(answer.body);
}
