// Client address arithmetic for one (profile, node) WireGuard range pair (reference §6.2).
// Pure math only: choosing a free index against the database happens elsewhere.
//
// Candidate k is IPv4 network + 2 + k paired with IPv6 network + 2 + k. Offset 0 is
// the network address and offset 1 the node's own interface address (the gateway),
// and the last IPv4 address is the broadcast address, hence 2^(32 − p4) − 3 clients.

import {
  addressAt,
  addressBits,
  formatIpAddress,
  ipAddressFamily,
  type IpPrefix,
  parseIpAddress,
  parseIpPrefix,
  prefixContainsAddress,
  prefixSize,
} from '../net/ip-prefix.js';

/** Addresses before the first client: the network address and the gateway. */
export const FIRST_CLIENT_OFFSET = 2;

export interface PairedAddresses {
  ipFour: string;
  ipSix: string;
}

/** How many clients the range pair can hold. Throws for /31, /32 or an IPv6 range that cannot pair one-to-one. */
export function poolCapacity(rangeFour: string, rangeSix: string): number {
  return checkedPool(rangeFour, rangeSix).capacity;
}

/** The addresses of client number `index` (0-based): index 0 is network + 2 in both families. */
export function clientAddressesAt(rangeFour: string, rangeSix: string, index: number): PairedAddresses {
  const { four, six, capacity } = checkedPool(rangeFour, rangeSix);
  if (!Number.isInteger(index) || index < 0 || index >= capacity) {
    throw new RangeError(`client index ${index} is outside the pool of ${capacity} addresses of ${rangeFour}`);
  }
  const offset = BigInt(FIRST_CLIENT_OFFSET + index);
  return {
    ipFour: formatIpAddress(addressAt(four, offset)),
    ipSix: formatIpAddress(addressAt(six, offset)),
  };
}

/**
 * Where an address pair issued elsewhere (an eduVPN server, which pairs them the same way) sits
 * in the pool: its index, or why the pool cannot hold it — an address outside the ranges (or
 * the network, gateway or broadcast address), or an IPv6 address that is not the partner of the
 * IPv4 one.
 */
export function poolIndexOf(
  rangeFour: string,
  rangeSix: string,
  addresses: PairedAddresses,
): { readonly index: number } | { readonly problem: 'outside' | 'unpaired' } {
  const { four, six, capacity } = checkedPool(rangeFour, rangeSix);
  if (ipAddressFamily(addresses.ipFour) !== 4 || ipAddressFamily(addresses.ipSix) !== 6) return { problem: 'outside' };
  const ipFour = parseIpAddress(addresses.ipFour);
  const ipSix = parseIpAddress(addresses.ipSix);
  if (!prefixContainsAddress(four, ipFour) || !prefixContainsAddress(six, ipSix)) return { problem: 'outside' };
  const index = Number(ipFour.value - four.network) - FIRST_CLIENT_OFFSET;
  if (index < 0 || index >= capacity) return { problem: 'outside' };
  return ipSix.value - six.network === BigInt(FIRST_CLIENT_OFFSET + index) ? { index } : { problem: 'unpaired' };
}

/**
 * Network + 1 in each family: the node's interface address, and what the
 * `@GW4@`/`@GW6@` DNS placeholders stand for in client configurations.
 */
export function gatewayAddresses(rangeFour: string, rangeSix: string): PairedAddresses {
  const { four, six } = parseRanges(rangeFour, rangeSix);
  return {
    ipFour: formatIpAddress(addressAt(four, 1)),
    ipSix: formatIpAddress(addressAt(six, 1)),
  };
}

function parseRanges(rangeFour: string, rangeSix: string): { four: IpPrefix; six: IpPrefix } {
  const four = parseIpPrefix(rangeFour);
  const six = parseIpPrefix(rangeSix);
  if (four.family !== 4) throw new Error(`WireGuard IPv4 range "${rangeFour}" is not an IPv4 prefix`);
  if (six.family !== 6) throw new Error(`WireGuard IPv6 range "${rangeSix}" is not an IPv6 prefix`);
  return { four, six };
}

type CheckedPool = { four: IpPrefix; six: IpPrefix; capacity: number };

/** A handful of configured ranges, used on every create: parse and check each pair once. */
const checkedPools = new Map<string, CheckedPool>();

function checkedPool(rangeFour: string, rangeSix: string): CheckedPool {
  const cacheKey = `${rangeFour} ${rangeSix}`;
  let pool = checkedPools.get(cacheKey);
  if (pool === undefined) {
    pool = checkPool(rangeFour, rangeSix);
    if (checkedPools.size < 1024) checkedPools.set(cacheKey, pool);
  }
  return pool;
}

function checkPool(rangeFour: string, rangeSix: string): CheckedPool {
  const { four, six } = parseRanges(rangeFour, rangeSix);
  if (four.length > addressBits(4) - 2) {
    throw new Error(`WireGuard IPv4 range "${rangeFour}" is too small: a /30 or larger network is required`);
  }
  const capacity = Number(prefixSize(four)) - 3;
  // The last IPv6 partner is network + 2 + (capacity − 1); it must still lie inside the range.
  if (BigInt(FIRST_CLIENT_OFFSET + capacity) > prefixSize(six)) {
    throw new Error(
      `WireGuard IPv6 range "${rangeSix}" is too small to pair with the ${capacity} addresses of "${rangeFour}"`,
    );
  }
  return { four, six, capacity };
}
