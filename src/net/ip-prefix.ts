// IPv4/IPv6 address and prefix arithmetic on bigint.
//
// Both families share one representation (a bigint plus the family) so that the
// AllowedIPs algorithm can compare and sort IPv4 and IPv6 prefixes by their plain
// numeric network address, which is what the reference behaviour requires
// (reference §6.3: `::/1` sorts between `0.0.0.0/1` and `128.0.0.0/2`).

import { isIPv4, isIPv6 } from 'node:net';

export type IpFamily = 4 | 6;

export interface IpAddress {
  readonly family: IpFamily;
  readonly value: bigint;
}

/** A network: `network` never has host bits set (parsing normalises them away). */
export interface IpPrefix {
  readonly family: IpFamily;
  readonly network: bigint;
  readonly length: number;
}

export function addressBits(family: IpFamily): 32 | 128 {
  return family === 4 ? 32 : 128;
}

// ---------------------------------------------------------------------------
// Single addresses

/** Parses a dotted-quad IPv4 or an IPv6 address (no zone id, no brackets). Throws on anything else. */
export function parseIpAddress(text: string): IpAddress {
  const family = ipAddressFamily(text);
  if (family === 4) return { family, value: parseIPv4(text) };
  if (family === 6) return { family, value: parseIPv6(text) };
  throw new Error(`invalid IP address "${text}"`);
}

/** What parseIpAddress accepts, answered without making an error (asked on every create of a file). */
export function isIpAddress(text: string): boolean {
  return ipAddressFamily(text) !== null;
}

/** 4 or 6 for an address parseIpAddress accepts; null for anything else (a host name). */
export function ipAddressFamily(text: string): IpFamily | null {
  if (isIPv4(text)) return 4;
  // node's isIPv6 also accepts a zone id ("fe80::1%eth0"); a zone is meaningless in a
  // route or an interface address, so it is refused here.
  return isIPv6(text) && !text.includes('%') ? 6 : null;
}

function parseIPv4(text: string): bigint {
  // Already validated by isIPv4 (four decimal octets 0-255, no leading zeros).
  return text.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n);
}

function parseIPv6(text: string): bigint {
  const groups = ipv6Groups(text);
  if (groups === null) {
    throw new Error(`invalid IPv6 address "${text}"`);
  }
  return groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

/**
 * The eight 16-bit groups of an IPv6 address that isIPv6 accepted (so its structure is known to
 * be sound): expands "::" and an optional trailing dotted IPv4. Null if they are not eight.
 */
function ipv6Groups(text: string): number[] | null {
  const halves = text.split('::');
  let groups: number[];
  if (halves.length === 1) {
    groups = groupsOf(text);
  } else {
    const head = groupsOf(halves[0] ?? '');
    const tail = groupsOf(halves[1] ?? '');
    groups = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  }
  return groups.length === 8 ? groups : null;
}

function groupsOf(part: string): number[] {
  if (part === '') return [];
  const groups: number[] = [];
  for (const piece of part.split(':')) {
    if (piece.includes('.')) {
      const v4 = Number(parseIPv4(piece));
      groups.push(Math.floor(v4 / 0x10000), v4 % 0x10000);
    } else {
      groups.push(parseInt(piece, 16));
    }
  }
  return groups;
}

/**
 * RFC 5952 text of an IPv6 address, as formatIpAddress writes it, or null for anything
 * parseIpAddress refuses as IPv6; no bigint on the way (asked for every peer a node is given).
 */
export function canonicalIPv6(text: string): string | null {
  if (ipAddressFamily(text) !== 6) return null;
  const groups = ipv6Groups(text);
  return groups === null ? null : formatIPv6Groups(groups);
}

export function formatIpAddress(address: IpAddress): string {
  return address.family === 4 ? formatIPv4(address.value) : formatIPv6(address.value);
}

function formatIPv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => ((value >> shift) & 0xffn).toString()).join('.');
}

function formatIPv6(value: bigint): string {
  const groups: number[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) {
    groups.push(Number((value >> shift) & 0xffffn));
  }
  return formatIPv6Groups(groups);
}

/** RFC 5952 text of eight groups: lowercase, no leading zeros, longest run (≥ 2) of zero groups as "::" (leftmost on ties). */
function formatIPv6Groups(groups: readonly number[]): string {
  // RFC 5952 §5: IPv4-mapped addresses (::ffff:0:0/96) are written with the IPv4 part in dotted form.
  if (
    groups[0] === 0 &&
    groups[1] === 0 &&
    groups[2] === 0 &&
    groups[3] === 0 &&
    groups[4] === 0 &&
    groups[5] === 0xffff
  ) {
    const high = groups[6] ?? 0;
    const low = groups[7] ?? 0;
    return `::ffff:${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }

  let bestStart = -1;
  let bestLength = 0;
  for (let start = 0; start < 8; ) {
    if (groups[start] !== 0) {
      start += 1;
      continue;
    }
    let end = start;
    while (end < 8 && groups[end] === 0) end += 1;
    if (end - start > bestLength) {
      bestStart = start;
      bestLength = end - start;
    }
    start = end;
  }

  const hex = (part: readonly number[]): string => part.map((group) => group.toString(16)).join(':');
  if (bestLength < 2) {
    // A single zero group is never shortened to "::" (RFC 5952 §4.2.2).
    return hex(groups);
  }
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

// ---------------------------------------------------------------------------
// Prefixes

/**
 * Parses "address/length". Host bits are allowed and cleared ("10.42.42.2/24" is
 * 10.42.42.0/24), because profile configuration and the reference both write
 * client ranges that way. Throws an Error naming the offending text otherwise.
 */
export function parseIpPrefix(text: string): IpPrefix {
  const known = parsedPrefixes.get(text);
  if (known !== undefined) return known;
  // Frozen: one object is handed to every caller of the same text.
  const prefix = Object.freeze(parseNewPrefix(text));
  // Full (a caller that parsed many networks once): starts afresh, so the configuration's few
  // texts, parsed again at the next create, are held again at once.
  if (parsedPrefixes.size >= MOST_PARSED_PREFIXES) parsedPrefixes.clear();
  parsedPrefixes.set(text, prefix);
  return prefix;
}

/**
 * Prefixes already parsed, by their text: every create parses its profile's ranges, routes and
 * gateway again, and IPv6 parsing was most of a file's rendering. The texts come from the
 * configuration, a handful; the bound keeps other callers from growing the map without end.
 */
const parsedPrefixes = new Map<string, IpPrefix>();
const MOST_PARSED_PREFIXES = 1024;

function parseNewPrefix(text: string): IpPrefix {
  const slash = text.indexOf('/');
  if (slash === -1) {
    throw new Error(`invalid IP prefix "${text}": expected "<address>/<prefix length>"`);
  }
  const addressText = text.slice(0, slash);
  const lengthText = text.slice(slash + 1);

  let address: IpAddress;
  try {
    address = parseIpAddress(addressText);
  } catch {
    throw new Error(`invalid IP prefix "${text}": "${addressText}" is not an IPv4 or IPv6 address`);
  }

  const bits = addressBits(address.family);
  // Plain decimal only: no sign, no leading zeros, no whitespace.
  if (!/^(0|[1-9][0-9]{0,2})$/.test(lengthText) || Number(lengthText) > bits) {
    throw new Error(`invalid IP prefix "${text}": prefix length must be an integer from 0 to ${bits}`);
  }
  return makePrefix(address.family, address.value, Number(lengthText));
}

/** Same as parseIpPrefix; the shorter name other modules (src/config/option-checks.ts) already import. */
export const parsePrefix = parseIpPrefix;

export function isIpPrefix(text: string): boolean {
  try {
    parseIpPrefix(text);
    return true;
  } catch {
    return false;
  }
}

/** Builds a prefix, clearing any host bits of `address`. */
export function makePrefix(family: IpFamily, address: bigint, length: number): IpPrefix {
  const bits = addressBits(family);
  if (!Number.isInteger(length) || length < 0 || length > bits) {
    throw new RangeError(`prefix length ${length} is out of range for IPv${family}`);
  }
  return { family, network: address & networkMask(family, length), length };
}

function networkMask(family: IpFamily, length: number): bigint {
  const bits = BigInt(addressBits(family));
  const all = (1n << bits) - 1n;
  return all ^ ((1n << (bits - BigInt(length))) - 1n);
}

export function formatIpPrefix(prefix: IpPrefix): string {
  return `${formatIpAddress({ family: prefix.family, value: prefix.network })}/${prefix.length}`;
}

/** Number of addresses in the prefix (including network and, for IPv4, broadcast). */
export function prefixSize(prefix: IpPrefix): bigint {
  return 1n << BigInt(addressBits(prefix.family) - prefix.length);
}

export function prefixContainsAddress(prefix: IpPrefix, address: IpAddress): boolean {
  return (
    prefix.family === address.family && (address.value & networkMask(prefix.family, prefix.length)) === prefix.network
  );
}

/** True when every address of `inner` is also in `outer` (equal prefixes contain each other). */
export function prefixContains(outer: IpPrefix, inner: IpPrefix): boolean {
  return (
    outer.family === inner.family &&
    outer.length <= inner.length &&
    (inner.network & networkMask(outer.family, outer.length)) === outer.network
  );
}

/** True when the two prefixes share at least one address (for CIDR blocks: one contains the other). */
export function prefixesOverlap(a: IpPrefix, b: IpPrefix): boolean {
  return prefixContains(a, b) || prefixContains(b, a);
}

export function prefixEquals(a: IpPrefix, b: IpPrefix): boolean {
  return a.family === b.family && a.network === b.network && a.length === b.length;
}

/** The two halves of a prefix (one bit longer each). A host prefix (/32, /128) cannot be halved. */
export function halvePrefix(prefix: IpPrefix): [IpPrefix, IpPrefix] {
  const bits = addressBits(prefix.family);
  if (prefix.length >= bits) {
    throw new RangeError(`cannot split ${formatIpPrefix(prefix)}: it is a single address`);
  }
  const length = prefix.length + 1;
  const halfSize = 1n << BigInt(bits - length);
  return [
    { family: prefix.family, network: prefix.network, length },
    { family: prefix.family, network: prefix.network + halfSize, length },
  ];
}

/**
 * Splits a prefix into `count` equally sized, consecutive sub-prefixes (e.g. one
 * per OpenVPN process). `count` must be a power of two that the prefix can hold.
 */
export function splitPrefix(prefix: IpPrefix, count: number): IpPrefix[] {
  if (!Number.isInteger(count) || count < 1 || (count & (count - 1)) !== 0) {
    throw new RangeError(`cannot split into ${count} networks: the count must be a power of two`);
  }
  const extraBits = Math.log2(count);
  const length = prefix.length + extraBits;
  const bits = addressBits(prefix.family);
  if (length > bits) {
    throw new RangeError(`cannot split ${formatIpPrefix(prefix)} into ${count} networks: it is too small`);
  }
  const step = 1n << BigInt(bits - length);
  return Array.from({ length: count }, (_, index) => ({
    family: prefix.family,
    network: prefix.network + step * BigInt(index),
    length,
  }));
}

/** The address at `network + offset`; throws when that falls outside the prefix. */
export function addressAt(prefix: IpPrefix, offset: bigint | number): IpAddress {
  const delta = BigInt(offset);
  if (delta < 0n || delta >= prefixSize(prefix)) {
    throw new RangeError(`offset ${delta} is outside ${formatIpPrefix(prefix)}`);
  }
  return { family: prefix.family, value: prefix.network + delta };
}
