// `WireGuard`: the port and MTU the nodes' interfaces use, and the proxy that carries WireGuard
// over HTTPS, checked so a profile cannot be left offering no transport at all.
import type { Report } from './option-checks.js';
import type { PortalConfig, WireGuardProxy } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';

export function resolveWireGuard(raw: ParsedPortalConfig['WireGuard'], report: Report): PortalConfig['wireGuard'] {
  return { listenPort: raw.listenPort, mtu: raw.setMtu ?? null, proxy: resolveWireGuardProxy(raw, report) };
}

function resolveWireGuardProxy(raw: ParsedPortalConfig['WireGuard'], report: Report): WireGuardProxy {
  if (raw.onlyProxy && !raw.enableProxy) {
    report(
      'WireGuard.onlyProxy',
      'needs "enableProxy": true, otherwise WireGuard profiles would offer no transport at all',
    );
  }
  if (raw.proxyUrl !== undefined) {
    // The node's host name is appended as a path segment; a query or fragment would swallow it.
    // Asked of the text: the URL parser calls a bare `?` or `#` at the end no query or fragment.
    if (/[?#]/.test(raw.proxyUrl)) report('WireGuard.proxyUrl', `"${raw.proxyUrl}" must not have a query or fragment`);
  }
  if (!raw.enableProxy) return { enabled: false };
  return {
    enabled: true,
    only: raw.onlyProxy,
    proxyUrl: raw.proxyUrl === undefined ? null : raw.proxyUrl.replace(/\/+$/, ''),
  };
}
