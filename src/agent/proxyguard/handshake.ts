// Whether an HTTP request may become a ProxyGuard tunnel: `GET <path>` over HTTP/1.1 with
// `Connection: Upgrade` and `Upgrade: UoTLV/1`. Everything else is refused with the status
// that tells the sender what is wrong. Pure, so every refusal is pinned by unit tests.

export const UOTLV_PROTOCOL = 'UoTLV/1';

export interface RelayRequest {
  readonly method: string;
  /** The request target as sent (path and optional query). */
  readonly url: string;
  readonly httpVersion: string;
  readonly upgrade: string | undefined;
  readonly connection: string | undefined;
}

export type RefusalStatus = 400 | 404 | 405 | 426;

export type RelayVerdict =
  | { readonly kind: 'upgrade' }
  | {
      readonly kind: 'refuse';
      readonly status: RefusalStatus;
      readonly message: string;
      readonly headers: Readonly<Record<string, string>>;
    };

/**
 * Accepted paths: `/` (a reverse proxy that strips the prefix) and any path whose last
 * segment is one of this node's host names, such as `/proxyguard/vpn1.example.org` (one
 * that keeps it). Another node's name is a misrouted request: 404 instead of a silent
 * tunnel to a WireGuard server that does not know the client.
 */
export function judgeRelayRequest(request: RelayRequest, hostNames: ReadonlySet<string>): RelayVerdict {
  if (!isRelayPath(request.url, hostNames))
    return refuse(404, `no ProxyGuard relay for this node at ${pathOf(request.url).slice(0, 200)}`);
  if (request.method !== 'GET') return refuse(405, `method ${request.method} not allowed, use GET`, { allow: 'GET' });
  if (request.httpVersion !== '1.1') return refuse(400, `HTTP/${request.httpVersion} cannot upgrade; use HTTP/1.1`);
  if (!listsToken(request.upgrade, UOTLV_PROTOCOL)) {
    return refuse(
      426,
      `this endpoint only speaks ${UOTLV_PROTOCOL}: send "Connection: Upgrade" and "Upgrade: ${UOTLV_PROTOCOL}"`,
      {
        upgrade: UOTLV_PROTOCOL,
        connection: 'Upgrade',
      },
    );
  }
  if (!listsToken(request.connection, 'upgrade')) return refuse(400, '"Upgrade" needs "Connection: Upgrade"');
  return { kind: 'upgrade' };
}

function isRelayPath(url: string, hostNames: ReadonlySet<string>): boolean {
  const path = pathOf(url);
  if (path === '/') return true;
  const segments = path.split('/').filter((segment) => segment !== '');
  const last = segments.at(-1);
  if (last === undefined) return false;
  try {
    return hostNames.has(decodeURIComponent(last));
  } catch {
    return false; // malformed percent-encoding names no host
  }
}

function pathOf(url: string): string {
  const queryStart = url.indexOf('?');
  return queryStart === -1 ? url : url.slice(0, queryStart);
}

/** Header values are comma-separated lists of case-insensitive tokens (RFC 9110 §7.6.1, §7.8). */
function listsToken(value: string | undefined, token: string): boolean {
  if (value === undefined) return false;
  return value.split(',').some((item) => item.trim().toLowerCase() === token.toLowerCase());
}

function refuse(status: RefusalStatus, message: string, headers: Readonly<Record<string, string>> = {}): RelayVerdict {
  return { kind: 'refuse', status, message, headers };
}
