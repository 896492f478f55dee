// Deterministic NAT (the idea of RFC 7422): every client IPv4 address of a node leaves through
// one public address and one fixed block of source ports, so that "public address, port, time"
// in an abuse report names one client address without logging a single flow. The agent programs
// the mapping into nftables and the portal reads it backwards; both compute it with this one
// pure function of the node's client ranges, public addresses and block size, so they agree.
//
// The clients are the host addresses of the IPv4 ranges (network + 2 up to the last but one:
// network + 1 is the node's gateway, the last is broadcast), ranges in numeric order whatever
// order the profiles come in. Client number i goes to public address i ÷ B (addresses in numeric
// order) and block i mod B of it, where B = ⌊64,512 ÷ portsPerClient⌋ blocks fit in the ports
// 1024–65535; ports left over at the top of an address are never used.
import { formatIpAddress, formatIpPrefix, parseIpAddress, parseIpPrefix, type IpPrefix } from './ip-prefix.js';

/** Ports below this are never handed out (the well-known ports stay the node's own). */
export const FIRST_NAT_PORT = 1024;
export const USABLE_NAT_PORTS = 65536 - FIRST_NAT_PORT;
export const DEFAULT_PORTS_PER_CLIENT = 2000;
export const MIN_PORTS_PER_CLIENT = 64;
export const MAX_PORTS_PER_CLIENT = USABLE_NAT_PORTS;

/** What decides a node's mapping; two equal settings give the same mapping. */
export interface NatSettings {
  /** The node's client ranges (IPv6 ones are ignored: IPv6 is routed, not translated). */
  readonly ranges: readonly string[];
  readonly publicAddresses: readonly string[];
  readonly portsPerClient: number;
}

/** One client's share: its public address and ports `firstPort`–`lastPort`. */
export interface NatBlock {
  readonly clientAddress: string;
  readonly publicAddress: string;
  readonly firstPort: number;
  readonly lastPort: number;
}

/** Why settings cannot be mapped; the message names the numbers. */
export class NatSettingsError extends Error {}

interface Range {
  readonly firstHost: number;
  readonly hosts: number;
  /** Clients of the ranges before this one. */
  readonly before: number;
}

export class DeterministicNat {
  /** The settings in canonical form: ranges and addresses sorted, each once. */
  readonly settings: NatSettings;
  readonly clients: number;
  readonly blocksPerAddress: number;
  readonly #ranges: readonly Range[];
  readonly #addresses: readonly number[];

  constructor(settings: NatSettings) {
    const { portsPerClient } = settings;
    if (
      !Number.isInteger(portsPerClient) ||
      portsPerClient < MIN_PORTS_PER_CLIENT ||
      portsPerClient > MAX_PORTS_PER_CLIENT
    )
      throw new NatSettingsError(
        `portsPerClient must be a whole number from ${MIN_PORTS_PER_CLIENT} to ${MAX_PORTS_PER_CLIENT}, not ${portsPerClient}`,
      );
    const prefixes = uniqueSorted(
      settings.ranges.map(parseIpPrefix).filter((prefix) => prefix.family === 4),
      (prefix) => prefix.network,
      formatIpPrefix,
    );
    for (const [index, prefix] of prefixes.entries()) {
      const next = prefixes[index + 1];
      if (next !== undefined && next.network <= lastAddress(prefix))
        throw new NatSettingsError(`the client ranges ${formatIpPrefix(prefix)} and ${formatIpPrefix(next)} overlap`);
    }
    const addresses = uniqueSorted(
      settings.publicAddresses.map((text) => {
        const address = parseIpAddress(text);
        if (address.family !== 4) throw new NatSettingsError(`public address ${text} is not IPv4`);
        return address;
      }),
      (address) => address.value,
      formatIpAddress,
    );
    if (addresses.length === 0) throw new NatSettingsError('deterministic NAT needs at least one public address');

    let before = 0;
    const ranges: Range[] = [];
    for (const prefix of prefixes) {
      const size = Number(lastAddress(prefix) - prefix.network + 1n);
      const hosts = Math.max(0, size - 3);
      ranges.push({ firstHost: Number(prefix.network) + 2, hosts, before });
      before += hosts;
    }
    this.#ranges = ranges;
    this.#addresses = addresses.map((address) => Number(address.value));
    this.clients = before;
    this.blocksPerAddress = Math.floor(USABLE_NAT_PORTS / portsPerClient);
    const capacity = this.blocksPerAddress * addresses.length;
    if (this.clients > capacity)
      throw new NatSettingsError(
        `${this.clients} client addresses need ${Math.ceil(this.clients / this.blocksPerAddress)} public addresses at ` +
          `${portsPerClient} ports each (${this.blocksPerAddress} clients per address), but ${addresses.length} ` +
          `${addresses.length === 1 ? 'is' : 'are'} given: add addresses or lower portsPerClient`,
      );
    this.settings = {
      ranges: prefixes.map(formatIpPrefix),
      publicAddresses: addresses.map(formatIpAddress),
      portsPerClient,
    };
  }

  /** The block of a client address; null when the address is not a client of these ranges. */
  blockOf(clientAddress: string): NatBlock | null {
    const address = parseIpAddress(clientAddress);
    if (address.family !== 4) return null;
    const value = Number(address.value);
    const range = this.#ranges.find(
      (candidate) => value >= candidate.firstHost && value < candidate.firstHost + candidate.hosts,
    );
    return range === undefined ? null : this.#block(range.before + (value - range.firstHost));
  }

  /** The client address that owns a public address's port; null when no client does. */
  clientOf(publicAddress: string, port: number): string | null {
    let address: number;
    try {
      const parsed = parseIpAddress(publicAddress);
      if (parsed.family !== 4) return null;
      address = Number(parsed.value);
    } catch {
      return null;
    }
    const addressIndex = this.#addresses.indexOf(address);
    if (addressIndex === -1 || !Number.isInteger(port) || port < FIRST_NAT_PORT || port > 65535) return null;
    const block = Math.floor((port - FIRST_NAT_PORT) / this.settings.portsPerClient);
    if (block >= this.blocksPerAddress) return null;
    const client = addressIndex * this.blocksPerAddress + block;
    if (client >= this.clients) return null;
    const range = this.#ranges.findLast((candidate) => candidate.before <= client && candidate.hosts > 0);
    return range === undefined ? null : ipv4(range.firstHost + (client - range.before));
  }

  /** True when `publicAddress` is one of this mapping's. */
  usesAddress(publicAddress: string): boolean {
    try {
      const parsed = parseIpAddress(publicAddress);
      return parsed.family === 4 && this.#addresses.includes(Number(parsed.value));
    } catch {
      return false;
    }
  }

  /** Every client's block, clients in order (65,533 for a /16). */
  *blocks(): Generator<NatBlock> {
    for (let client = 0; client < this.clients; client++) yield this.#block(client);
  }

  #block(client: number): NatBlock {
    const range = this.#ranges.findLast((candidate) => candidate.before <= client && candidate.hosts > 0) as Range;
    const firstPort = FIRST_NAT_PORT + (client % this.blocksPerAddress) * this.settings.portsPerClient;
    return {
      clientAddress: ipv4(range.firstHost + (client - range.before)),
      publicAddress: ipv4(this.#addresses[Math.floor(client / this.blocksPerAddress)] as number),
      firstPort,
      lastPort: firstPort + this.settings.portsPerClient - 1,
    };
  }
}

function lastAddress(prefix: IpPrefix): bigint {
  return prefix.network + (1n << BigInt(32 - prefix.length)) - 1n;
}

function uniqueSorted<T>(items: readonly T[], key: (item: T) => bigint, text: (item: T) => string): T[] {
  const byText = new Map(items.map((item) => [text(item), item]));
  return [...byText.values()].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}

function ipv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
}
