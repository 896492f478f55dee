// The public endpoint where a device redeems an enrollment token: `POST {baseUrl}enroll` with
// form fields `enrollment_token` and `public_key` (or `csr`) and an Accept header as for
// create; it answers the configuration file. It needs no admin key (the token is the
// credential), so it has its own allow-list (`enrollment.allowList`, default everyone) and a
// limit per source address (`enrollment.requestsPerMinute`, 429 beyond), both checked before
// the body is read. The token is never logged; it is not an Admin API call, so it is not in
// the audit log (the configuration it made is announced as create's is).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PortalContext } from '../core/context.js';
import { redeemEnrollmentToken } from '../core/enrollment/index.js';
import { AddressAllowList } from './address-allow-list.js';
import { sendError } from './error-reply.js';
import { readParams } from './params.js';
import { ENROLL_PARAMS, ENROLL_PATH } from '../protocol/admin-api.js';
import { requestsUnder, type HttpSurface } from './surface.js';
import { RequestsPerAddress } from './requests-per-address.js';
import { configurationAnswer } from './routes/create.js';
import { enrollWithCertificate, type CertificateCheck } from './certificate-check.js';

export interface EnrollEndpoint {
  /** Runs before the body is read: the allow-list (403), then the limit per address (429). */
  guard(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  handle(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}

/**
 * `certificateCheck`: with `enrollment.clientCertificate`, a request without a token that comes
 * from a trusted proxy (`adminApi.trustedProxyList`) with the verified client certificate in the
 * configured header (PEM, URL-encoded as nginx's `$ssl_client_escaped_cert`) enrolls by that
 * certificate, which the portal checks itself.
 */
export function enrollEndpoint(ctx: PortalContext, certificateCheck: CertificateCheck | null = null): EnrollEndpoint {
  const trustedProxies = new AddressAllowList(ctx.config.adminApi.trustedProxyList);
  const allowList = new AddressAllowList(ctx.config.enrollment.allowList);
  const limit = new RequestsPerAddress(ctx.config.enrollment.requestsPerMinute, () => ctx.clock.now().getTime());
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
      const forwarded =
        certificateCheck === null
          ? undefined
          : forwardedCertificate(request, certificateCheck.config.header, trustedProxies);
      const hasToken = typeof request.body === 'object' && request.body !== null && 'enrollment_token' in request.body;
      if (certificateCheck !== null && forwarded !== undefined && !hasToken) {
        await enrollWithCertificate(ctx, certificateCheck, [forwarded], request, reply);
        return;
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

/** The PEM certificate (with its chain) a trusted proxy forwarded, URL-decoded; undefined when none or not from a trusted proxy. */
function forwardedCertificate(
  request: FastifyRequest,
  header: string,
  trustedProxies: AddressAllowList,
): string | undefined {
  const value = request.headers[header.toLowerCase()];
  if (typeof value !== 'string' || value === '' || !trustedProxies.allows(request.socket.remoteAddress ?? ''))
    return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}
