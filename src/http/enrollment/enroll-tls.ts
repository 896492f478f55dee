// `{baseUrl}enroll` over mutual TLS (a device enrolls with its MDM certificate), on `enrollment.tls.listen`: the server
// asks for a client certificate and accepts the handshake whatever comes, so that a device
// without one, or with a wrong one, gets a JSON 403 with the reason instead of a broken
// handshake; the portal checks the chain itself (src/keys/client-certificate.ts). The device
// sends `public_key` (or `csr`) and Accept, no token; `profile_id` and `platform` may be sent and
// must then be the registered device's. The same allow-list and limit per address as the plain
// endpoint apply, and the same timeouts and connection cap as the main listener (src/http/plumbing/listener-budgets.ts).
import type { TLSSocket, PeerCertificate, DetailedPeerCertificate } from 'node:tls';
import formbody from '@fastify/formbody';
import { parseFormText } from '../plumbing/form-text.js';
import type { PortalContext } from '../../core/context.js';
import { ENROLL_PATH } from '../../protocol/admin-api.js';
import { AddressAllowList } from '../../net/address-allow-list.js';
import { enrollEndpoint } from './enroll.js';
import { handleError, sendError } from '../plumbing/error-reply.js';
import { decodePath } from '../plumbing/surface.js';
import { enrollWithCertificate, type CertificateCheck } from './certificate-check.js';
import { budgetedListener } from '../plumbing/listener-budgets.js';

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
  const app = budgetedListener({
    listen: ctx.config.listen,
    logger: ctx.logger.child({ component: 'enroll-tls' }),
    // Devices connect themselves: mutual TLS ends here, so no reverse proxy stands in between.
    uncapped: new AddressAllowList([]),
    tls: { cert: tls.certificatePem, key: tls.keyPem, requestCert: true, rejectUnauthorized: false },
  });
  await app.register(formbody, { parser: parseFormText });
  app.setErrorHandler(handleError);
  const enroll = enrollEndpoint(ctx);
  app.addHook('onRequest', (request, reply) => enroll.guard(request, reply));
  const enrollPath = `${ctx.config.basePath}/${ENROLL_PATH}`;
  app.post(enrollPath, async (request, reply) => {
    await enrollWithCertificate(ctx, check, presentedChain(request.raw.socket as TLSSocket), request, reply);
  });
  // Any other path or method gets the portal's JSON error, as on the main listener.
  app.setNotFoundHandler((request, reply) => {
    const path = decodePath(request.url.split('?')[0] ?? '');
    if (path === enrollPath) return sendError(reply, 405, `method "${request.method}" not allowed`, { allow: 'POST' });
    return sendError(reply, 404, `"${path}" not found`);
  });
  await app.listen({ host: tls.host, port: tls.port });
  const bound = app.server.address();
  if (bound === null || typeof bound === 'string') throw new Error('enrollment.tls: the listener has no address');
  const address = `https://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
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
