// Addresses for OpenVPN clients, chosen by the agent before it asks the portal. OpenVPN takes a
// client's address from its pool only after the management interface has authorised the
// client, yet the portal's /connect wants the addresses with the question. So the agent hands
// them out itself, from the same pool OpenVPN would use (the `server`/`server-ipv6` networks
// that every >CLIENT:CONNECT carries as ifconfig_local/ifconfig_netmask and
// ifconfig_ipv6_local/ifconfig_ipv6_netbits) and in the same way: the lowest free offset,
// IPv4 and IPv6 paired (network + k), never the network, the server's own address or the IPv4
// broadcast. `client-auth` then pushes them with ifconfig-push / ifconfig-ipv6-push.
import { formatIpAddress, makePrefix, parseIpAddress, prefixSize, type IpPrefix } from '../../net/ip-prefix.js';

export interface PoolLayout {
  readonly four: { readonly prefix: IpPrefix; readonly local: bigint; readonly netmask: string };
  /** Null when the server has no IPv6 pool. */
  readonly six: { readonly prefix: IpPrefix; readonly local: bigint; readonly localText: string } | null;
}

export interface ClientAddresses {
  readonly ipFour: string;
  /** Null when the server has no IPv6 pool. */
  readonly ipSix: string | null;
}

/** The pool of a server from a >CLIENT:CONNECT environment; null when it does not describe one. */
export function poolLayoutFromEnv(env: ReadonlyMap<string, string>): PoolLayout | null {
  const localText = env.get('ifconfig_local');
  const netmask = env.get('ifconfig_netmask');
  if (localText === undefined || netmask === undefined) return null;
  const length = netmaskLength(netmask);
  const local = parseAddress(localText, 4);
  if (length === null || local === null || length > 30) return null;

  const sixLocalText = env.get('ifconfig_ipv6_local');
  const sixBits = env.get('ifconfig_ipv6_netbits');
  let six: PoolLayout['six'] = null;
  if (sixLocalText !== undefined && sixBits !== undefined) {
    const sixLocal = parseAddress(sixLocalText, 6);
    const sixLength = /^[0-9]{1,3}$/.test(sixBits) ? Number(sixBits) : NaN;
    if (sixLocal === null || !(sixLength >= 64 && sixLength <= 126)) return null;
    six = {
      prefix: makePrefix(6, sixLocal, sixLength),
      local: sixLocal,
      localText: formatIpAddress({ family: 6, value: sixLocal }),
    };
  }
  return { four: { prefix: makePrefix(4, local, length), local, netmask }, six };
}

/** The lowest free pair of addresses; null when the pool is exhausted. */
export function allocateAddresses(layout: PoolLayout, isTaken: (address: string) => boolean): ClientAddresses | null {
  const { four, six } = layout;
  // The last IPv4 offset is the broadcast address.
  let last = prefixSize(four.prefix) - 2n;
  if (six !== null && prefixSize(six.prefix) - 1n < last) last = prefixSize(six.prefix) - 1n;
  for (let offset = 1n; offset <= last; offset += 1n) {
    const ipFourValue = four.prefix.network + offset;
    if (ipFourValue === four.local) continue;
    const ipFour = formatIpAddress({ family: 4, value: ipFourValue });
    if (isTaken(ipFour)) continue;
    if (six === null) return { ipFour, ipSix: null };
    const ipSixValue = six.prefix.network + offset;
    if (ipSixValue === six.local) continue;
    const ipSix = formatIpAddress({ family: 6, value: ipSixValue });
    if (isTaken(ipSix)) continue;
    return { ipFour, ipSix };
  }
  return null;
}

/** The client-connect directives that give a client its addresses. */
export function pushDirectives(layout: PoolLayout, addresses: ClientAddresses): string[] {
  const lines = [`ifconfig-push ${addresses.ipFour} ${layout.four.netmask}`];
  if (layout.six !== null && addresses.ipSix !== null) {
    lines.push(`ifconfig-ipv6-push ${addresses.ipSix}/${layout.six.prefix.length} ${layout.six.localText}`);
  }
  return lines;
}

/** Canonical text of an address (OpenVPN and `ip` may spell IPv6 differently); null if invalid. */
export function canonicalIp(text: string): string | null {
  try {
    return formatIpAddress(parseIpAddress(text));
  } catch {
    return null;
  }
}

function parseAddress(text: string, family: 4 | 6): bigint | null {
  try {
    const address = parseIpAddress(text);
    return address.family === family ? address.value : null;
  } catch {
    return null;
  }
}

/** 255.255.255.0 → 24; null unless a contiguous IPv4 mask. */
function netmaskLength(netmask: string): number | null {
  const value = parseAddress(netmask, 4);
  if (value === null) return null;
  const bits = value.toString(2).padStart(32, '0');
  if (!/^1*0*$/.test(bits)) return null;
  const firstZero = bits.indexOf('0');
  return firstZero === -1 ? 32 : firstZero;
}
