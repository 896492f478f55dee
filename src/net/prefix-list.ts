// The set of routed prefixes given to a WireGuard client as `AllowedIPs`
// (reference §6.3, "AllowedIPs construction").

import { formatIpPrefix, halvePrefix, type IpPrefix, parseIpPrefix, prefixContains } from './ip-prefix.js';

/**
 * A list of prefixes kept free of redundancy: no member is covered by another.
 * Both families live in one list; containment is only ever checked within a family.
 */
export class PrefixList {
  #prefixes: IpPrefix[] = [];

  /**
   * Adds a prefix (already normalised to its network by the parser). A prefix that
   * an existing member covers adds nothing; members the new prefix covers are dropped.
   */
  add(prefix: IpPrefix): void {
    if (this.#prefixes.some((existing) => prefixContains(existing, prefix))) {
      return;
    }
    this.#prefixes = this.#prefixes.filter((existing) => !prefixContains(prefix, existing));
    this.#prefixes.push(prefix);
  }

  /**
   * Removes every address of `excluded`. A member that strictly covers it is halved
   * repeatedly, keeping the halves that do not overlap, which yields the minimal CIDR
   * cover of what remains. A member lying entirely inside `excluded` is dropped.
   */
  exclude(excluded: IpPrefix): void {
    const remaining: IpPrefix[] = [];
    for (const member of this.#prefixes) {
      if (prefixContains(excluded, member)) {
        continue;
      }
      if (prefixContains(member, excluded)) {
        remaining.push(...carveOut(member, excluded));
      } else {
        remaining.push(member);
      }
    }
    this.#prefixes = remaining;
  }

  /**
   * Members ordered by numeric network address, then prefix length, then IPv4 before
   * IPv6. The families are deliberately NOT grouped: the reference compares the raw
   * numbers, so `::/1` lands between `0.0.0.0/1` and `128.0.0.0/2`.
   */
  sorted(): IpPrefix[] {
    return [...this.#prefixes].sort(compareForAllowedIps);
  }
}

function compareForAllowedIps(a: IpPrefix, b: IpPrefix): number {
  if (a.network !== b.network) return a.network < b.network ? -1 : 1;
  if (a.length !== b.length) return a.length - b.length;
  return a.family - b.family;
}

/** `outer` minus `inner`, where `outer` strictly contains `inner`. */
function carveOut(outer: IpPrefix, inner: IpPrefix): IpPrefix[] {
  const pieces: IpPrefix[] = [];
  let current = outer;
  while (current.length < inner.length) {
    const [low, high] = halvePrefix(current);
    if (prefixContains(low, inner)) {
      pieces.push(high);
      current = low;
    } else {
      pieces.push(low);
      current = high;
    }
  }
  return pieces;
}

export interface AllowedIpsInput {
  /** Full tunnel: route `0.0.0.0/0` and `::/0`. */
  defaultGateway: boolean;
  /** CIDR texts routed through the tunnel in addition. */
  routeList: readonly string[];
  /** CIDR texts carved out of everything routed (including the client's own networks). */
  excludeRouteList: readonly string[];
  /** The client's own IPv4 and IPv6 networks, host bits allowed (e.g. "10.42.42.2/24"). */
  clientPrefixes: readonly string[];
}

/** The `AllowedIPs` entries, canonical CIDR text, in the reference's order. Throws on invalid CIDR text. */
export function allowedIps(input: AllowedIpsInput): string[] {
  const list = new PrefixList();
  if (input.defaultGateway) {
    list.add(parseIpPrefix('0.0.0.0/0'));
    list.add(parseIpPrefix('::/0'));
  }
  for (const route of input.routeList) list.add(parseIpPrefix(route));
  for (const own of input.clientPrefixes) list.add(parseIpPrefix(own));
  for (const excluded of input.excludeRouteList) list.exclude(parseIpPrefix(excluded));
  return list.sorted().map(formatIpPrefix);
}
