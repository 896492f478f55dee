// Where a WireGuard-over-TCP client reaches ProxyGuard for one node: the `ProxyEndpoint` line
// of reference §7.1. The site's TLS reverse proxy answers that URL and forwards it to the
// relay of the node named by the last path segment (docs/wireguard-over-tcp.md).

export interface ProxyEndpointInput {
  /** `WireGuard.proxyUrl` without trailing slashes, or null when unset. */
  readonly proxyUrl: string | null;
  /** The portal's public address (`baseUrl`); only its host name is used. */
  readonly portalBaseUrl: URL;
  /** The node's `hostName` in the profile. */
  readonly hostName: string;
}

/**
 * `<proxyUrl>/<hostName>` when `proxyUrl` is set, else `https://<portal host>/proxyguard/<hostName>`:
 * the reference always assumes HTTPS on the default port in front of the portal.
 */
export function proxyEndpointUrl(input: ProxyEndpointInput): string {
  const base = input.proxyUrl ?? `https://${input.portalBaseUrl.hostname}/proxyguard`;
  return `${base.replace(/\/+$/, '')}/${input.hostName}`;
}
