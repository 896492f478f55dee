// The check of device certificates for enrollment, so a managed device enrolls
// with the certificate its MDM gave it and no token, shared by the mutual-TLS
// listener (src/http/enrollment/enroll-tls.ts) and the plain `{baseUrl}enroll` behind a TLS reverse proxy
// that forwards the verified certificate in a header (`enrollment.clientCertificate.header`,
// believed only from `enrollment.clientCertificate.trustedProxyList` with `verifiedHeader`
// SUCCESS, see src/http/enrollment/enroll.ts). Either way the portal checks the chain itself.
// A revocation list file is parsed at start (one that cannot be parsed refuses the start); the
// lists are kept fresh by src/core/devices/revocation-lists.ts, and until a URL source gives a
// list that checks the presented chain, it waits (503). A refused enrollment is in the audit log.
// A trust anchor that the path rules refuse whatever is below it is named at start.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { ClientCertificateConfig } from '../../config/portal-config.js';
import { RevocationListRefresher, rememberIntermediateCas } from '../../core/devices/index.js';
import { enrollByCertificate } from '../../core/enrollment/index.js';
import type { PortalContext } from '../../core/context.js';
import {
  ClientCertificateVerifier,
  readCaCertificates,
  trustAnchorStandings,
  type CaCertificate,
  type ClientCertificateVerdict,
  type TrustAnchorStanding,
} from '../../keys/client-certificate.js';
import { messageOf } from '../../shared/error-message.js';
import { formatAtom } from '../../shared/time.js';
import { sendError, statusOfPortalError } from '../plumbing/error-reply.js';
import { unauthenticatedCaller, type AdminCall } from '../../core/admin-call.js';
import { recordAdminCall } from '../../core/access/index.js';
import type { IssuedConfiguration } from '../../core/issuing/index.js';
import { PortalError } from '../../core/errors.js';
import { CERTIFICATE_ENROLL_PARAMS, ENROLL_PATH } from '../../protocol/admin-api.js';
import { readParams } from '../plumbing/params.js';
import { configurationAnswer } from '../admin-api/routes/issuing/create.js';

export class CertificateCheck {
  readonly verifier: ClientCertificateVerifier;
  readonly config: ClientCertificateConfig;
  /** Keeps the verifier's revocation lists fresh and retires the devices they revoke. */
  readonly revocationLists: RevocationListRefresher;
  /** Each configured trust anchor, and the rule that refuses it, if one does (reportRefusedTrustAnchors). */
  readonly trustAnchors: readonly TrustAnchorStanding[];

  /** Null when `enrollment.clientCertificate` is not set; throws, naming the option, when a trust anchor or revocation list cannot be parsed. */
  static fromConfig(ctx: PortalContext): CertificateCheck | null {
    const config = ctx.config.enrollment.clientCertificate;
    return config === null ? null : new CertificateCheck(ctx, config);
  }

  private constructor(ctx: PortalContext, config: ClientCertificateConfig) {
    this.config = config;
    const rule =
      config.deviceId.prefix === undefined
        ? { from: config.deviceId.from }
        : { from: config.deviceId.from, prefix: config.deviceId.prefix };
    try {
      this.verifier = new ClientCertificateVerifier(config.trustAnchors, [], rule, config.intuneTenantId);
      this.trustAnchors = trustAnchorStandings(config.trustAnchors);
    } catch (error) {
      throw new Error(`enrollment.clientCertificate.trustAnchors: not PEM certificates (${messageOf(error)})`);
    }
    try {
      // Files as read at start; a URL's list is fetched by the first refresh.
      this.verifier.replaceCrls(config.crlSources.map((source) => (source.kind === 'file' ? source.initial : null)));
    } catch (error) {
      throw new Error(`enrollment.clientCertificate.crl: not a PEM or DER revocation list (${messageOf(error)})`);
    }
    let intermediates: CaCertificate[];
    try {
      intermediates = readCaCertificates(config.intermediates);
    } catch (error) {
      throw new Error(`enrollment.clientCertificate.intermediates: not PEM certificates (${messageOf(error)})`);
    }
    const sourceIssuers = config.crlSources.map((source, index) => {
      if (source.issuer === null) return null;
      const [issuer, ...more] = readSourceIssuer(source.issuer, index);
      if (issuer === undefined || more.length > 0)
        throw new Error(
          `enrollment.clientCertificate.crl[${index}].issuer: the file must hold one certificate, the CA's`,
        );
      return issuer;
    });
    // A source's CA counts as a configured intermediate: its lists are believed from the first reading.
    const named = sourceIssuers.filter((issuer) => issuer !== null);
    this.revocationLists = new RevocationListRefresher(
      ctx,
      config,
      this.verifier,
      [...intermediates, ...named],
      sourceIssuers,
    );
  }
}

/**
 * Logs each configured trust anchor that the path rules refuse, naming it (subject, SHA-256) and
 * the rule. It vouches for nothing: no device certificate under it enrolls, and no revocation
 * list it signs is believed. The portal starts anyway, as another anchor may be good; the
 * metric vpn_portal_trust_anchor_refused says it too.
 */
export function reportRefusedTrustAnchors(check: CertificateCheck, logger: Logger): void {
  for (const { entry, subject, sha256, refusedBy } of check.trustAnchors)
    if (refusedBy !== null)
      logger.error(
        { option: `enrollment.clientCertificate.trustAnchors[${entry}]`, subject, sha256, rule: refusedBy },
        `enrollment.clientCertificate.trustAnchors[${entry}]: ${refusedBy} (SHA-256 ${sha256}); it vouches for no device certificate and no revocation list until it is replaced`,
      );
}

function readSourceIssuer(pem: string, index: number): CaCertificate[] {
  try {
    return readCaCertificates([pem]);
  } catch (error) {
    throw new Error(`enrollment.clientCertificate.crl[${index}].issuer: not a PEM certificate (${messageOf(error)})`);
  }
}

/** What a 503 for revocation lists not read yet says in Retry-After: about one refresh of a slow distribution point. */
const LISTS_NOT_READ_RETRY_SECONDS = 5;
/** An expired list is read again 10 s after each failure, then less often: a minute apart is enough. */
const EXPIRED_LIST_RETRY_SECONDS = 60;

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
  const first = await check.verifier.verify(presented, ctx.clock.now());
  if (!first.ok) return refuseCertificate(ctx, request, reply, first.reason);
  if (await waitsForRevocationLists(ctx, check, first, request, reply)) return;
  // A refresh may have landed during the waits: the lists they found current, or newer ones,
  // give the verdict that enrolls, never those read before them (an expired list that lacks a
  // revocation the list replacing it names).
  const verdict = await check.verifier.verify(presented, ctx.clock.now());
  if (!verdict.ok) return refuseCertificate(ctx, request, reply, verdict.reason);
  try {
    await rememberIntermediateCas(ctx, verdict.intermediates);
  } catch (error) {
    request.log.error({ err: error }, 'the intermediate CAs of an enrolled chain could not be stored');
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

/** A chain refused (403): logged, audited and answered with the reason. */
async function refuseCertificate(
  ctx: PortalContext,
  request: FastifyRequest,
  reply: FastifyReply,
  reason: string,
): Promise<void> {
  request.log.warn({ ip: request.ip, reason }, 'certificate enrollment refused');
  await auditRefusal(ctx, request.ip, {}, 403, reason);
  await sendError(reply, 403, reason);
}

/**
 * Answers 503 (and true) while a revocation list that may name the chain's certificates is not
 * read yet, or is past its nextUpdate with no current list of its CA.
 */
async function waitsForRevocationLists(
  ctx: PortalContext,
  check: CertificateCheck,
  verdict: Extract<ClientCertificateVerdict, { ok: true }>,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
  // A source from which no list checks this chain yet would let a revoked certificate pass: it waits.
  const notRead = await check.revocationLists.awaitedBy(verdict.authorities);
  if (notRead.length > 0) {
    const reason = `the revocation list ${notRead.join(', ')} has not been read yet, or holds no list of this certificate's CA yet; try again shortly`;
    request.log.warn({ ip: request.ip, crl: notRead }, 'certificate enrollment waits for a revocation list');
    await auditRefusal(ctx, request.ip, { device_id: verdict.certificate.deviceId }, 503, reason);
    await sendError(reply, 503, reason, { 'retry-after': String(LISTS_NOT_READ_RETRY_SECONDS) });
    return true;
  }
  // A list past its nextUpdate may lack a revocation published since: it waits for a newer one.
  const expired = await check.revocationLists.expiredFor(verdict.authorities, ctx.clock.now());
  if (expired.length > 0) {
    const named = expired.map(({ location, nextUpdate }) => `${location} (nextUpdate ${formatAtom(nextUpdate)})`);
    const reason = `the revocation list ${named.join(', ')} of this certificate's CA has expired and no newer one could be read yet; try again later`;
    request.log.warn(
      { ip: request.ip, crl: expired.map(({ location }) => location) },
      'certificate enrollment waits for a current revocation list',
    );
    await auditRefusal(ctx, request.ip, { device_id: verdict.certificate.deviceId }, 503, reason);
    await sendError(reply, 503, reason, { 'retry-after': String(EXPIRED_LIST_RETRY_SECONDS) });
    return true;
  }
  return false;
}
