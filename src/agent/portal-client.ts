// The agent's side of the Node API: it fetches its server configuration and asks the portal
// whether an OpenVPN client may connect, reporting disconnects; authenticated with the node key.
import {
  CONNECT_ALLOWED,
  CONNECT_REFUSED,
  NODE_API_PATHS,
  NODE_NUMBER_HEADER,
  type ConnectForm,
  type DisconnectForm,
  type ServerConfigForm,
} from '../protocol/node-api.js';
import { fetchFailureReason } from '../shared/error-message.js';
import type { NodeNumber } from '../shared/ids.js';
import type { Secret } from '../shared/secret.js';
import { parseServerConfig, type NodeServerConfig } from './node-assignment.js';

export interface PortalClientOptions {
  /** Base URL of the portal's Node API, e.g. http://portal/vpn-user-portal/node-api.php */
  readonly apiUrl: URL;
  readonly nodeNumber: NodeNumber;
  readonly nodeKey: Secret;
  /** Profiles this node serves; empty means all. */
  readonly profileIdList: readonly string[];
  /** What the portal needs to render this node's OpenVPN server files. */
  readonly openVpn: OpenVpnNodeFacts;
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
}

export interface OpenVpnNodeFacts {
  /** `user`/`group` OpenVPN switches to. */
  readonly user: string;
  readonly group: string;
  /** AES-256-GCM first in `data-ciphers` (the CPU has AES instructions). */
  readonly preferAes: boolean;
  /** Absolute folder where each server's management socket `<profileId>-<n>.sock` lives. */
  readonly managementDir: string;
}

/** An OpenVPN client asks to connect (or renegotiates): the portal decides. */
export interface ConnectRequest {
  readonly profileId: string;
  readonly commonName: string;
  /** The client's public address; empty (the field is left out) when OpenVPN did not tell. */
  readonly originatingIp: string;
  readonly ipFour: string;
  /** Empty (the field is left out) when the server has no IPv6 pool. */
  readonly ipSix: string;
  /** A TLS renegotiation of a connected client: the portal decides but logs no new connection. */
  readonly reauth: boolean;
}

/** Allowed only on the portal's exact `OK`; everything else denies (fail closed). */
export type ConnectVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly portalAnswered: boolean; readonly reason: string };

export interface DisconnectReport {
  readonly profileId: string;
  readonly commonName: string;
  /** Empty (the field is left out) when unknown. */
  readonly ipFour: string;
  readonly ipSix: string;
  /** Bytes the server received from the client. */
  readonly bytesIn: number;
  /** Bytes the server sent to the client. */
  readonly bytesOut: number;
  /** How long ago (ms) the portal admitted the connection; left out when not known. */
  readonly ageMs?: number;
}

/** The portal did not give a usable answer; the message never contains the node key. */
export class PortalRequestError extends Error {
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super(message);
    this.name = 'PortalRequestError';
  }
}

const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_ERROR_TEXT = 200;
/**
 * Requests to the portal in flight at once; more wait their turn. fetch would otherwise open a
 * connection per request, and a burst of OpenVPN clients would exceed the portal's cap on
 * connections per address (listen.maxConnectionsPerAddress, 256 by default) and be refused.
 */
const MAX_CONCURRENT_REQUESTS = 16;

/** Client of the portal's Node API, authenticated with the node number and node key. */
export class PortalClient {
  readonly #options: PortalClientOptions;
  readonly #fetch: typeof fetch;
  #inFlight = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(options: PortalClientOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? fetch;
  }

  async fetchServerConfig(): Promise<NodeServerConfig> {
    const url = this.#endpoint(NODE_API_PATHS.serverConfig);
    const openVpn = this.#options.openVpn;
    const fields: Omit<ServerConfigForm, 'profile_id_list'> = {
      vpn_user: openVpn.user,
      vpn_group: openVpn.group,
      prefer_aes: openVpn.preferAes ? 'yes' : 'no',
      management_dir: openVpn.managementDir,
    };
    const body = new URLSearchParams(
      Object.entries(fields).filter((entry): entry is [string, string] => entry[1] !== undefined),
    );
    for (const profileId of this.#options.profileIdList) body.append('profile_id_list', profileId);

    const { response, text } = await this.#exchange(url, body);
    if (!response.ok) {
      throw new PortalRequestError(
        `the portal answered ${response.status} to ${url.pathname}: ${errorText(text)}`,
        response.status,
      );
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new PortalRequestError(
        `the portal answered ${url.pathname} with something that is not JSON`,
        response.status,
      );
    }
    return parseServerConfig(json);
  }

  /**
   * Asks the portal whether an OpenVPN client may connect. Never throws: anything but HTTP 200
   * with the body `OK` (an `ERR`, another status or body, a timeout, no portal) denies.
   */
  async authorizeConnect(request: ConnectRequest): Promise<ConnectVerdict> {
    const url = this.#endpoint(NODE_API_PATHS.connect);
    const form: ConnectForm = {
      profile_id: request.profileId,
      common_name: request.commonName,
      ip_four: request.ipFour,
      // An unknown address is left out, not sent empty.
      ...(request.originatingIp === '' ? {} : { originating_ip: request.originatingIp }),
      ...(request.ipSix === '' ? {} : { ip_six: request.ipSix }),
      ...(request.reauth ? { reauth: 'yes' } : {}),
    };
    const body = new URLSearchParams(form);
    let status: number;
    let text: string;
    try {
      ({
        response: { status },
        text,
      } = await this.#exchange(url, body, 'text/plain'));
    } catch (error) {
      return { allowed: false, portalAnswered: false, reason: error instanceof Error ? error.message : String(error) };
    }
    if (status === 200 && text === CONNECT_ALLOWED) return { allowed: true };
    if (status === 200 && text === CONNECT_REFUSED)
      return { allowed: false, portalAnswered: true, reason: 'the portal answered ERR' };
    return {
      allowed: false,
      portalAnswered: false,
      reason: `the portal answered ${status} to ${url.pathname}: ${errorText(text)}`,
    };
  }

  /** Tells the portal that a client's connection ended; throws PortalRequestError unless it answers `OK`. */
  async reportDisconnect(report: DisconnectReport): Promise<void> {
    const url = this.#endpoint(NODE_API_PATHS.disconnect);
    const form: DisconnectForm = {
      common_name: report.commonName,
      bytes_in: String(report.bytesIn),
      bytes_out: String(report.bytesOut),
      profile_id: report.profileId,
      ...(report.ipFour === '' ? {} : { ip_four: report.ipFour }),
      ...(report.ipSix === '' ? {} : { ip_six: report.ipSix }),
      ...(report.ageMs === undefined ? {} : { age_ms: String(report.ageMs) }),
    };
    const body = new URLSearchParams(form);
    const { response, text } = await this.#exchange(url, body, 'text/plain');
    if (response.status !== 200 || text !== 'OK') {
      throw new PortalRequestError(
        `the portal answered ${response.status} to ${url.pathname}: ${errorText(text)}`,
        response.status,
      );
    }
  }

  /** One request and its whole answer, within the limit of requests in flight (the connection is busy until the body is read). */
  async #exchange(url: URL, body: URLSearchParams, accept?: string): Promise<{ response: Response; text: string }> {
    if (this.#inFlight >= MAX_CONCURRENT_REQUESTS) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#inFlight += 1;
    try {
      const response = await this.#post(url, body, accept);
      return { response, text: await response.text() };
    } finally {
      // The slot passes straight to the next waiting request, or is given back.
      const next = this.#waiting.shift();
      if (next === undefined) this.#inFlight -= 1;
      else next();
    }
  }

  /**
   * One retry on a transport error: after a portal restart the first request can land on a
   * kept-alive connection the old process closed ("other side closed").
   */
  async #post(url: URL, body: URLSearchParams, accept = 'application/json'): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#fetch(url, {
          method: 'POST',
          headers: {
            [NODE_NUMBER_HEADER]: String(this.#options.nodeNumber),
            Authorization: `Bearer ${this.#options.nodeKey.reveal()}`,
            'Content-Type': 'application/x-www-form-urlencoded',
            Accept: accept,
          },
          body,
          redirect: 'error',
          signal: AbortSignal.timeout(this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
        });
      } catch (error) {
        if (attempt < 2 && !(error instanceof Error && error.name === 'TimeoutError')) continue;
        // origin + path only: credentials or a query in apiUrl stay out of the logs.
        throw new PortalRequestError(
          `cannot reach the portal at ${url.origin}${url.pathname}: ${fetchFailureReason(error)}`,
          null,
        );
      }
    }
  }

  #endpoint(path: string): URL {
    const base = this.#options.apiUrl.href.replace(/\/+$/, '');
    return new URL(`${base}${path}`);
  }
}

function errorText(body: string): string {
  try {
    const json: unknown = JSON.parse(body);
    if (typeof json === 'object' && json !== null && 'error' in json && typeof json.error === 'string') {
      return json.error.slice(0, MAX_ERROR_TEXT);
    }
  } catch {
    // Not JSON: fall through to the raw text.
  }
  return body.slice(0, MAX_ERROR_TEXT) || '(empty body)';
}
