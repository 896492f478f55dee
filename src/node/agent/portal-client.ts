import type { NodeNumber } from '../../core/ids.js';
import type { Secret } from './secret.js';
import { parseServerConfig, type NodeServerConfig } from './server-config.js';

export interface PortalClientOptions {
  /** Base URL of the portal's Node API, e.g. http://portal/vpn-user-portal/node-api.php */
  readonly apiUrl: URL;
  readonly nodeNumber: NodeNumber;
  readonly nodeKey: Secret;
  /** Profiles this node serves; empty means all. */
  readonly profileIdList: readonly string[];
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
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

/** Client of the portal's Node API, authenticated with the node number and node key. */
export class PortalClient {
  readonly #options: PortalClientOptions;
  readonly #fetch: typeof fetch;

  constructor(options: PortalClientOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? fetch;
  }

  async fetchServerConfig(): Promise<NodeServerConfig> {
    const url = this.#endpoint('server_config');
    const body = new URLSearchParams();
    for (const profileId of this.#options.profileIdList) body.append('profile_id_list', profileId);

    const response = await this.#post(url, body);
    const text = await response.text();
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
      throw new PortalRequestError(`the portal answered ${url.pathname} with something that is not JSON`, response.status);
    }
    return parseServerConfig(json);
  }

  /**
   * One retry on a transport error: after a portal restart the first request can land on a
   * kept-alive connection the old process closed ("other side closed").
   */
  async #post(url: URL, body: URLSearchParams): Promise<Response> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#fetch(url, {
          method: 'POST',
          headers: {
            'X-Node-Number': String(this.#options.nodeNumber),
            Authorization: `Bearer ${this.#options.nodeKey.reveal()}`,
            'Content-Type': 'application/x-www-form-urlencoded',
            Accept: 'application/json',
          },
          body,
          redirect: 'error',
          signal: AbortSignal.timeout(this.#options.timeoutMs ?? DEFAULT_TIMEOUT_MS),
        });
      } catch (error) {
        if (attempt < 2 && !(error instanceof Error && error.name === 'TimeoutError')) continue;
        // origin + path only: credentials or a query in apiUrl stay out of the logs.
        throw new PortalRequestError(`cannot reach the portal at ${url.origin}${url.pathname}: ${describeFetchError(error)}`, null);
      }
    }
  }

  #endpoint(call: string): URL {
    const base = this.#options.apiUrl.href.replace(/\/+$/, '');
    return new URL(`${base}/${call}`);
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

function describeFetchError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // undici hides the reason (ECONNREFUSED, timeout) in `cause`.
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.message}${cause}`;
}
