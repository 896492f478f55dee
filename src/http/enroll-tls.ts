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
import { enrollByCertificate } from '../core/certificate-enrollment.js';
import type { PortalContext } from '../core/context.js';
import { ClientCertificateVerifier } from '../keys/client-certificate.js';
import type { ClientCertificateConfig } from '../config/portal-config.js';
import { messageOf } from '../shared/error-message.js';
import { readFile } from 'node:fs/promises';
import { ENROLL_PATH } from '../protocol/admin-api.js';
import { enrollEndpoint } from './enroll.js';
import { handleError, sendError } from './error-reply.js';
import { optional, param, readParams } from './params.js';
import { configurationAnswer } from './routes/create.js';

const BODY_LIMIT_BYTES = 64 * 1024;
/** A chain longer than this is not followed further (the verifier refuses long chains anyway). */
const MAX_PRESENTED = 8;

const TLS_ENROLL_PARAMS = {
  public_key: optional(param.devicePublicKey, "the device's own WireGuard public key (Base64 of 32 bytes)"),
  csr: optional(param.certificateRequest, "the device's own OpenVPN key as a PEM PKCS#10 certificate request"),
  prefer_tcp: optional(param.yesNo, '`yes` or `no` (default): prefer connecting over TCP'),
  profile_id: optional(param.profileId, "must be the registered device's profile when sent"),
  platform: optional(param.platform, "must be the registered device's platform when sent"),
};

export interface RunningEnrollTls {
  readonly url: string;
  /** Each revocation list file as last read, for the metrics. */
  revocationLists(): RevocationListState[];
  close(): Promise<void>;
}

export interface RevocationListState {
  readonly file: string;
  /** When the list in use was made (its thisUpdate). */
  readonly thisUpdate: Date | null;
  readonly entries: number;
  /** The last attempt to read the lists failed (the ones in use are kept). */
  readonly failing: boolean;
}

/** Starts the listener when `enrollment.tls` is set; throws, naming the option, when a trust anchor or revocation list cannot be read. */
export async function startEnrollTls(ctx: PortalContext): Promise<RunningEnrollTls | null> {
  const { tls, clientCertificate } = ctx.config.enrollment;
  if (tls === null || clientCertificate === null) return null;
  const verifier = makeVerifier(clientCertificate);
  const refresh = new CrlRefresh(ctx, clientCertificate, verifier);
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
    const verdict = await verifier.verify(presentedChain(request.raw.socket as TLSSocket), ctx.clock.now());
    if (!verdict.ok) {
      request.log.warn({ ip: request.ip, reason: verdict.reason }, 'certificate enrollment refused');
      return sendError(reply, 403, verdict.reason);
    }
    const params = readParams('post', request.body, TLS_ENROLL_PARAMS);
    const issued = await enrollByCertificate(ctx, {
      certificate: verdict.certificate,
      publicKey: params.public_key,
      csr: params.csr,
      preferTcp: params.prefer_tcp ?? false,
      accept: request.headers.accept,
      profileId: params.profile_id,
      platform: params.platform,
    });
    const answer = configurationAnswer(issued);
    return reply.code(200).headers(answer.headers).send(answer.body);
  });
  const address = await app.listen({ host: tls.host, port: tls.port });
  refresh.start();
  ctx.logger.info(`certificate enrollment at ${address}${ctx.config.basePath}/${ENROLL_PATH}`);
  return {
    url: address,
    revocationLists: () => refresh.states(),
    async close() {
      refresh.stop();
      await app.close();
    },
  };
}

function makeVerifier(config: ClientCertificateConfig): ClientCertificateVerifier {
  const rule = config.deviceId.prefix === undefined ? { from: config.deviceId.from } : { from: config.deviceId.from, prefix: config.deviceId.prefix };
  try {
    return new ClientCertificateVerifier(config.trustAnchors, [], rule);
  } catch (error) {
    throw new Error(`enrollment.clientCertificate.trustAnchors: not PEM certificates (${messageOf(error)})`);
  }
}

/**
 * Reads the revocation lists at start (a list that cannot be parsed refuses the start) and
 * every crlRefresh after; a refresh that fails keeps the lists in use and is logged once until
 * one succeeds again: an unreadable list never lets a revoked certificate back in, nor retires anything.
 */
class CrlRefresh {
  #timer: NodeJS.Timeout | undefined;
  #failing = false;

  constructor(
    private readonly ctx: PortalContext,
    private readonly config: ClientCertificateConfig,
    private readonly verifier: ClientCertificateVerifier,
  ) {
    try {
      verifier.replaceCrls(config.crls);
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

  states(): RevocationListState[] {
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
      if (this.#failing) this.ctx.logger.info('certificate revocation lists read again');
      this.#failing = false;
    } catch (error) {
      if (!this.#failing) this.ctx.logger.error({ err: error }, 'a certificate revocation list cannot be read; the last good ones stay in use');
      this.#failing = true;
    }
  }
}

/** The DER certificates the client sent, leaf first (Node links them through issuerCertificate). */
function presentedChain(socket: TLSSocket): Buffer[] {
  const chain: Buffer[] = [];
  let current: PeerCertificate | DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  while (current?.raw !== undefined && chain.length < MAX_PRESENTED) {
    chain.push(current.raw);
    const next: DetailedPeerCertificate | undefined = 'issuerCertificate' in current ? current.issuerCertificate : undefined;
    if (next === undefined || next === current || next.raw?.equals(current.raw) === true) break;
    current = next;
  }
  return chain;
}
