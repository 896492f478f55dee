// `{baseUrl}enroll` over mutual TLS (issue 23, item 3), on `enrollment.tls.listen`: the server
// asks for a client certificate and accepts the handshake whatever comes, so that a device
// without one, or with a wrong one, gets a JSON 403 with the reason instead of a broken
// handshake; the portal checks the chain itself (src/keys/client-certificate.ts). The device
// sends `public_key` (or `csr`) and Accept, no token; `profile_id` and `platform` may be sent and
// must then be the registered device's. The same allow-list and limit per address as the plain
// endpoint apply.
import type { TLSSocket, PeerCertificate, DetailedPeerCertificate } from 'node:tls';
import formbody from '@fastify/formbody';
import Fastify from 'fastify';
import type { PortalContext } from '../core/context.js';
import { ENROLL_PATH } from '../protocol/admin-api.js';
import { enrollEndpoint } from './enroll.js';
import { handleError } from './error-reply.js';
import { enrollWithCertificate, type CertificateCheck } from './certificate-check.js';

const BODY_LIMIT_BYTES = 64 * 1024;
/** A chain longer than this is not followed further (the verifier refuses long chains anyway). */
const MAX_PRESENTED = 8;

export interface RunningEnrollTls {
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the listener when `enrollment.tls` is set. */
export async function startEnrollTls(
  ctx: PortalContext,
  check: CertificateCheck | null,
): Promise<RunningEnrollTls | null> {
  const { tls } = ctx.config.enrollment;
  if (tls === null || check === null) return null;
  const app = Fastify({
    loggerInstance: ctx.logger.child({ component: 'enroll-tls' }),
    disableRequestLogging: true,
    bodyLimit: BODY_LIMIT_BYTES,
    https: { cert: tls.certificatePem, key: tls.keyPem, requestCert: true, rejectUnauthorized: false },
  });
  await app.register(formbody);
  app.setErrorHandler(handleError);
  const enroll = enrollEndpoint(ctx);
  app.addHook('onRequest', (request, reply) => enroll.guard(request, reply));
  app.post(`${ctx.config.basePath}/${ENROLL_PATH}`, async (request, reply) => {
    await enrollWithCertificate(ctx, check, presentedChain(request.raw.socket as TLSSocket), request, reply);
  });
  const address = await app.listen({ host: tls.host, port: tls.port });
  ctx.logger.info(`certificate enrollment at ${address}${ctx.config.basePath}/${ENROLL_PATH}`);
  return {
    url: address,
    close: () => app.close(),
  };
}

/** The DER certificates the client sent, leaf first (Node links them through issuerCertificate). */
function presentedChain(socket: TLSSocket): Buffer[] {
  const chain: Buffer[] = [];
  let current: PeerCertificate | DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  while (current?.raw !== undefined && chain.length < MAX_PRESENTED) {
    chain.push(current.raw);
    const next: DetailedPeerCertificate | undefined =
      'issuerCertificate' in current ? current.issuerCertificate : undefined;
    if (next === undefined || next === current || next.raw?.equals(current.raw) === true) break;
    current = next;
  }
  return chain;
}
