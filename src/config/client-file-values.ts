// The profile values written verbatim into every client file: `hostName` (WireGuard `Endpoint`,
// OpenVPN `remote`, the Apple profile's `RemoteAddress`), `dnsServerList` and
// `dnsSearchDomainList` (the wg-quick `DNS` line, the OpenVPN pushes). A value with a space, a
// comma, a `#` or a line break there would be misread by every client, or add lines of its own
// (a `PostUp` command, an OpenVPN directive); a DNS server written as a name is silently taken
// for a search domain by wg-quick and the WireGuard apps. So they are checked at start.
import { isIpAddress } from '../net/ip-prefix.js';
import type { Report } from './option-checks.js';

/** One label of a DNS name: letters, digits, hyphens (and underscores, seen in real names), not at the ends a hyphen. */
const LABEL = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$/;

/** A DNS name in its ASCII form: dot-separated labels, at most 253 characters, an optional final dot. */
export function isDnsName(text: string): boolean {
  const name = text.endsWith('.') ? text.slice(0, -1) : text;
  return name.length > 0 && name.length <= 253 && name.split('.').every((label) => LABEL.test(label));
}

/** `hostName`: the address clients connect to, an IP address (IPv6 without brackets) or a DNS name. */
export function checkHostName(text: string, option: string, report: Report): void {
  if (isIpAddress(text) || isDnsName(text)) return;
  report(
    option,
    `${JSON.stringify(text)} is not a host name or an IP address (no port, scheme, brackets or spaces; an international name in its ASCII form, xn--…)`,
  );
}

/** `dnsServerList`: IP addresses; `@GW4@` and `@GW6@` stand for the node's own tunnel addresses. */
export function checkDnsServers(servers: readonly string[], option: string, report: Report): void {
  for (const [index, server] of servers.entries()) {
    const address = server.replaceAll('@GW4@', '10.0.0.1').replaceAll('@GW6@', 'fd00::1');
    if (isIpAddress(address)) continue;
    report(
      `${option}[${index}]`,
      `${JSON.stringify(server)} is not an IP address, @GW4@ or @GW6@ (clients would take a name for a search domain)`,
    );
  }
}

/** `dnsSearchDomainList`: DNS names. */
export function checkSearchDomains(domains: readonly string[], option: string, report: Report): void {
  for (const [index, domain] of domains.entries()) {
    if (!isDnsName(domain)) report(`${option}[${index}]`, `${JSON.stringify(domain)} is not a domain name`);
  }
}
