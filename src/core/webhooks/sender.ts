// Sends one webhook request, guarded against server-side request forgery: the receiver's name is
// resolved here, every address it resolves to is checked (loopback, link-local, private, the
// portal's own host and other non-Internet ranges are refused unless `webhooks.allowPrivateTargets`
// allows them), and the connection is made to the checked address itself — a second lookup
// that answers differently (DNS rebinding) is never asked. TLS still verifies the name. No
// redirects are followed, no keep-alive is used, and the whole attempt (lookup, connect, answer)
// has one deadline.
import { lookup } from 'node:dns/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { WebhookSettings } from '../../config/portal-config.js';
import {
  formatIpAddress,
  isIpAddress,
  parseIpAddress,
  parseIpPrefix,
  prefixContainsAddress,
  type IpAddress,
  type IpPrefix,
} from '../../net/ip-prefix.js';
import { embeddedIpv4Addresses, ownSpecialRangeOf } from '../../net/special-addresses.js';

/** The receiver's answer is read up to this many bytes, for the delivery log. */
const EXCERPT_BYTES = 256;

export type SendResult =
  /** The receiver answered (any status). */
  | { readonly kind: 'answered'; readonly status: number; readonly excerpt: string }
  /** The address guard refused the target: nothing was sent. */
  | { readonly kind: 'refused'; readonly reason: string }
  /** No answer: the name did not resolve, the connection failed, or the deadline passed. */
  | { readonly kind: 'failed'; readonly reason: string };

/** Which addresses a webhook may go to. */
export class TargetGuard {
  readonly #allowed: readonly IpPrefix[];
  readonly #listenHost: string;

  constructor(settings: Pick<WebhookSettings, 'allowPrivateTargets'>, listenHost: string) {
    this.#allowed = settings.allowPrivateTargets.map(parseIpPrefix);
    this.#listenHost = listenHost;
  }

  /**
   * Why `address` is refused, or null when a webhook may go there. An IPv4 address carried inside
   * an IPv6 one (mapped, compatible, NAT64, 6to4, Teredo) is judged as itself, allow-list included.
   */
  refusal(address: string): string | null {
    const parsed = parseIpAddress(address);
    const allowed = (candidate: IpAddress) => this.#allowed.some((prefix) => prefixContainsAddress(prefix, candidate));
    if (allowed(parsed)) return null;
    const judged = [parsed, ...embeddedIpv4Addresses(parsed)].filter(
      (candidate) => candidate === parsed || !allowed(candidate),
    );
    for (const candidate of judged) {
      const range = ownSpecialRangeOf(candidate);
      // "an unspecified", "an IETF", but "a unique local".
      if (range !== null) return `${/^(?:[aeio]|un(?!ique))/i.test(range) ? 'an' : 'a'} ${range} address`;
    }
    const own = ownAddresses(this.#listenHost);
    return judged.some((candidate) => own.has(formatIpAddress(candidate)))
      ? "an address of the portal's own host"
      : null;
  }
}

export interface WebhookRequest {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** Sends `request` once; never throws. */
export async function sendWebhook(
  request: WebhookRequest,
  guard: TargetGuard,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<SendResult> {
  // Not AbortSignal.any([signal, AbortSignal.timeout(ms)]): Node may collect the timeout signal
  // inside the composite before it fires (nodejs/node#57736), and a receiver that never answers
  // then holds the delivery until the lease ends. The timer holds this controller strongly.
  const timedOut = new AbortController();
  const timer = setTimeout(() => timedOut.abort(), timeoutMs);
  const deadline = AbortSignal.any([signal, timedOut.signal]);
  const why = (error: unknown): string =>
    signal.aborted
      ? 'the portal stopped'
      : deadline.aborted
        ? `no answer within ${timeoutMs / 1000} s`
        : error instanceof Error
          ? error.message
          : String(error);
  try {
    const target = await resolveTarget(request.url, guard, deadline, why);
    if (target.kind !== 'allowed') return target;
    return await post(request, target.pinned, deadline);
  } catch (error) {
    return { kind: 'failed', reason: why(error) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Why a subscription to `url` would be refused by the address guard as the name resolves now,
 * or null (also when it does not resolve: it may by the time events happen; every attempt checks again).
 */
export async function targetRefusal(url: URL, guard: TargetGuard, timeoutMs: number): Promise<string | null> {
  const target = await resolveTarget(url, guard, AbortSignal.timeout(timeoutMs), () => '');
  return target.kind === 'refused' ? target.reason : null;
}

type Target =
  | { readonly kind: 'allowed'; readonly pinned: { address: string; family: number } }
  | Exclude<SendResult, { kind: 'answered' }>;

async function resolveTarget(
  url: URL,
  guard: TargetGuard,
  deadline: AbortSignal,
  why: (error: unknown) => string,
): Promise<Target> {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  let addresses: { address: string; family: number }[];
  try {
    addresses =
      isIP(host) === 0
        ? await raceAbort(lookup(host, { all: true, verbatim: true }), deadline)
        : [{ address: host, family: isIP(host) }];
  } catch (error) {
    return { kind: 'failed', reason: `cannot resolve ${host}: ${why(error)}` };
  }
  for (const { address } of addresses) {
    const refusal = guard.refusal(address);
    if (refusal !== null) {
      const resolves = address === host ? `${host} is` : `${host} resolves to ${address},`;
      return { kind: 'refused', reason: `${resolves} ${refusal}; allow it with webhooks.allowPrivateTargets` };
    }
  }
  const [pinned] = addresses;
  return pinned === undefined ? { kind: 'failed', reason: `${host} has no address` } : { kind: 'allowed', pinned };
}

function post(
  request: WebhookRequest,
  pinned: { address: string; family: number },
  signal: AbortSignal,
): Promise<SendResult> {
  // The connection goes to the address checked above, whatever the name resolves to by now.
  const pinnedLookup: LookupFunction = (_hostname, options, callback) => {
    if (options.all === true) callback(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
  const client = request.url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    // Once the status is in, the request's own error (the deadline cutting a body that still
    // trickles) no longer fails the attempt: readExcerpt ends with what came.
    let answered = false;
    const outgoing = client.request(
      request.url,
      {
        method: 'POST',
        headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
        lookup: pinnedLookup,
        agent: false,
        signal,
      },
      (response) => {
        answered = true;
        // The deadline ends the body's reading, whatever the request does with its own abort.
        const cut = () => response.destroy();
        signal.addEventListener('abort', cut, { once: true });
        void readExcerpt(response).then((excerpt) => {
          signal.removeEventListener('abort', cut);
          resolve({ kind: 'answered', status: response.statusCode ?? 0, excerpt });
        });
      },
    );
    outgoing.on('error', (error) => {
      if (!answered) reject(error);
    });
    outgoing.end(request.body);
  });
}

/**
 * The start of the answer's body; the rest is not read (the connection is closed). The status is
 * the answer: a body that ends early, or still trickles in when the deadline cuts the connection,
 * leaves the excerpt as far as it came. Failing the attempt then would send again an event the
 * receiver answered 2xx to.
 */
async function readExcerpt(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  try {
    for await (const chunk of response) {
      chunks.push(chunk as Buffer);
      length += (chunk as Buffer).length;
      if (length >= EXCERPT_BYTES) break;
    }
  } catch {
    // Cut off after the status: what came is the excerpt.
  }
  response.destroy();
  // Control characters (a NUL above all, which PostgreSQL refuses in text) become U+FFFD: a
  // binary answer is kept as readable text, and its attempt is recorded like any other.
  return (
    Buffer.concat(chunks)
      .subarray(0, EXCERPT_BYTES)
      .toString('utf8')
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is replaced
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, '\ufffd')
  );
}

function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    work.then(resolve, reject);
  });
}

/** The host's interface addresses and the portal's listen address, in canonical form. */
function ownAddresses(listenHost: string): Set<string> {
  const own = new Set<string>();
  const add = (address: string) => {
    if (isIpAddress(address)) own.add(formatIpAddress(parseIpAddress(address)));
  };
  for (const entries of Object.values(networkInterfaces())) for (const entry of entries ?? []) add(entry.address);
  if (isIP(listenHost) !== 0 && listenHost !== '0.0.0.0' && listenHost !== '::') add(listenHost);
  return own;
}
