// The public endpoint where a device redeems an enrollment token: `POST {baseUrl}enroll` with
// form fields `enrollment_token` and `public_key` (or `csr`) and an Accept header as for
// create; it answers the configuration file. It needs no admin key (the token is the
// credential), so it has its own allow-list (`enrollment.allowList`, default everyone) and a
// limit per source address (`enrollment.requestsPerMinute`, 429 beyond), both checked before
// the body is read. The token is never logged; it is not an Admin API call, so it is not in
// the audit log (the configuration it made is announced as create's is).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../../core/context.js';
import { redeemEnrollmentToken } from '../../core/enrollment/index.js';
import { AddressAllowList } from '../../net/address-allow-list.js';
import { sendError } from '../plumbing/error-reply.js';
import { readParams } from '../plumbing/params.js';
import { ENROLL_PARAMS, ENROLL_PATH } from '../../protocol/admin-api.js';
import { requestsUnder, type HttpSurface } from '../plumbing/surface.js';
import { RequestsPerAddress } from '../plumbing/requests-per-address.js';
import { configurationAnswer } from '../admin-api/routes/issuing/create.js';
import { auditRefusal, enrollWithCertificate, type CertificateCheck } from './certificate-check.js';
import type { ClientCertificateConfig } from '../../config/portal-config.js';

export interface EnrollEndpoint {
  /** Runs before the body is read: the allow-list (403), then the limit per address (429). */
  guard(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  handle(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}

/**
 * `certificateCheck`: with `enrollment.clientCertificate`, a request without a token may enroll
 * by a client certificate that a reverse proxy verified and forwarded (PEM, URL-encoded as nginx's
 * `$ssl_client_escaped_cert`, in `header`); the portal checks it itself as well. The proxy must
 * be the direct peer and in `enrollment.clientCertificate.trustedProxyList` (not
 * `adminApi.trustedProxyList`: a proxy trusted to name the client's address may pass headers on
 * unchanged for other paths), and must say `SUCCESS` in `verifiedHeader` (nginx's
 * `$ssl_client_verify`). The certificate header from any other peer is refused (403), token or
 * not: a misconfigured proxy or a forgery should be seen, not silently become a token request.
 */
export function enrollEndpoint(ctx: PortalContext, certificateCheck: CertificateCheck | null = null): EnrollEndpoint {
  const forwardingProxies = new AddressAllowList(certificateCheck?.config.trustedProxyList ?? []);
  const allowList = new AddressAllowList(ctx.config.enrollment.allowList);
  const limit = new RequestsPerAddress(ctx.config.enrollment.requestsPerMinute);
  return {
    async guard(request, reply) {
      if (!allowList.allows(request.ip)) {
        request.log.warn({ ip: request.ip }, 'enrollment request from an address outside enrollment.allowList');
        await sendError(reply, 403, 'source address not allowed');
        return;
      }
      const retryAfter = limit.take(request.ip);
      if (retryAfter !== null) {
        request.log.warn(
          { ip: request.ip },
          'enrollment requests from one address beyond enrollment.requestsPerMinute',
        );
        await sendError(reply, 429, `too many enrollment requests from this address; try again in ${retryAfter} s`, {
          'retry-after': String(retryAfter),
        });
      }
    },
    async handle(request, reply) {
      const hasToken = typeof request.body === 'object' && request.body !== null && 'enrollment_token' in request.body;
      const forwarded =
        certificateCheck === null
          ? ({ kind: 'none' } as const)
          : forwardedCertificate(request, certificateCheck.config, forwardingProxies);
      if (forwarded.kind === 'untrusted-peer') {
        const reason = 'a client certificate header from a peer not in enrollment.clientCertificate.trustedProxyList';
        request.log.warn({ peer: request.socket.remoteAddress, ip: request.ip }, reason);
        await auditRefusal(ctx, request.ip, {}, 403, reason);
        await sendError(reply, 403, reason);
        return;
      }
      if (certificateCheck !== null && !hasToken) {
        if (forwarded.kind === 'verified') {
          await enrollWithCertificate(ctx, certificateCheck, [forwarded.pem], request, reply);
          return;
        }
        if (forwarded.kind === 'unverified') {
          const reason = `the proxy did not verify the client certificate (${forwarded.verdict})`;
          request.log.warn({ ip: request.ip, reason }, 'certificate enrollment refused');
          await auditRefusal(ctx, request.ip, {}, 403, reason);
          await sendError(reply, 403, reason);
          return;
        }
      }
      const params = readParams('post', request.body, ENROLL_PARAMS);
      const issued = await redeemEnrollmentToken(ctx, {
        token: params.enrollment_token,
        publicKey: params.public_key,
        csr: params.csr,
        preferTcp: params.prefer_tcp ?? false,
        accept: request.headers.accept,
      });
      const answer = configurationAnswer(issued);
      await reply.code(200).headers(answer.headers).send(answer.body);
    },
  };
}

/** `POST {base}/enroll` on the portal's server, behind its own guard. */
export function enrollSurface(ctx: PortalContext, certificateCheck: CertificateCheck | null): HttpSurface {
  const path = `${ctx.config.basePath}/${ENROLL_PATH}`;
  const enroll = enrollEndpoint(ctx, certificateCheck);
  return {
    owns: requestsUnder(path),
    guard: (request, reply) => enroll.guard(request, reply),
    async plugin(app) {
      app.post(path, (request, reply) => enroll.handle(request, reply));
    },
    methods: new Map([[path, 'POST']]),
  };
}

/** What a request says about a forwarded client certificate. */
type ForwardedCertificate =
  /** No certificate header (or an empty one). */
  | { readonly kind: 'none' }
  /** The header, from a peer not trusted to forward certificates. */
  | { readonly kind: 'untrusted-peer' }
  /** From a trusted proxy that does not say it verified it; `verdict` says what it said, for the reason. */
  | { readonly kind: 'unverified'; readonly verdict: string }
  /** From a trusted proxy that verified it: the PEM (with any chain), URL-decoded. */
  | { readonly kind: 'verified'; readonly pem: string };

/** The longest part of the proxy's verdict repeated in a refusal. */
const MAX_VERDICT_CHARS = 200;

/** How many times the request carries the header `name`, as sent (before Node joins repeats). */
function timesSent(request: FastifyRequest, name: string): number {
  const wanted = name.toLowerCase();
  const raw = request.raw.rawHeaders;
  let count = 0;
  for (let index = 0; index < raw.length; index += 2) if (raw[index]?.toLowerCase() === wanted) count++;
  return count;
}

/** Looks at the TCP peer itself (never X-Forwarded-For): only a listed proxy may forward a certificate. */
function forwardedCertificate(
  request: FastifyRequest,
  config: ClientCertificateConfig,
  forwardingProxies: AddressAllowList,
): ForwardedCertificate {
  const value = request.headers[config.header.toLowerCase()];
  if (value === undefined || value === '') return { kind: 'none' };
  if (!forwardingProxies.allows(request.socket.remoteAddress ?? '')) return { kind: 'untrusted-peer' };
  const verified = request.headers[config.verifiedHeader.toLowerCase()];
  if (verified !== 'SUCCESS') {
    const said = typeof verified === 'string' ? verified.slice(0, MAX_VERDICT_CHARS) : null;
    return {
      kind: 'unverified',
      verdict: said === null ? `no ${config.verifiedHeader}` : `${config.verifiedHeader}: ${said}`,
    };
  }
  // Several certificate headers (Node joins them with ", " into one string): not what a proxy
  // that replaces the header sends, and nothing says which one it verified.
  if (typeof value !== 'string' || timesSent(request, config.header) > 1)
    return { kind: 'unverified', verdict: `more than one ${config.header}` };
  try {
    return { kind: 'verified', pem: decodeURIComponent(value) };
  } catch {
    // Not URL-encoded: the portal's own check says it cannot read it.
    return { kind: 'verified', pem: value };
  }
}
