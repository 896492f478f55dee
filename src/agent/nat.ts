// Full tunnel on the node (`"nat"` in node.json): profiles default to `defaultGateway`, so
// clients send everything to the node, which must forward it and translate the client ranges'
// IPv4 traffic. The agent turns IP forwarding on and keeps one nftables table of its own,
// `inet vpn_portal_nat`, for traffic from the node's client ranges (WireGuard and OpenVPN) leaving
// for anywhere but those ranges: with `true` it masquerades (IPv4 and IPv6) behind the node's
// address; with deterministic NAT each client IPv4 address leaves through its fixed public
// address and port block (src/net/deterministic-nat.ts), one map looked up by source address,
// and IPv6 is routed as it is. The table is replaced atomically (one `nft -f`) when the ranges
// change and removed when the agent stops; the rest of the host's firewall is not touched.
import type { Logger } from 'pino';
import { formatIpPrefix, parseIpPrefix, type IpPrefix } from '../net/ip-prefix.js';
import { DeterministicNat, NatSettingsError } from '../net/deterministic-nat.js';
import type { NatMode } from '../protocol/vpn-daemon.js';
import type { Clock } from '../shared/time.js';
import type { NatSetting } from './config.js';
import { runChecked, type CommandRunner } from './process/command-runner.js';
import type { NodeServerConfig } from './node-assignment.js';

export const NAT_TABLE = 'vpn_portal_nat';
/** Deterministic NAT's map: client address → public address . port block. */
const PORT_MAP = 'client_block';

/** The client ranges of this node, from its server configuration. */
export function clientRanges(serverConfig: NodeServerConfig): IpPrefix[] {
  const ranges: IpPrefix[] = [];
  // The interface's addresses are the gateways (network+1) of the WireGuard ranges.
  for (const cidr of serverConfig.wireguard?.addressList ?? []) ranges.push(parseIpPrefix(cidr.text));
  for (const file of serverConfig.openvpn ?? []) {
    const content = file.content.reveal();
    const four = /^server (\S+) (\S+)$/m.exec(content);
    // `server 10.20.0.0/24 255.255.255.0` (the portal writes the length too) or `server 10.20.0.0 255.255.255.0`.
    if (four?.[1] !== undefined && four[2] !== undefined)
      ranges.push(parseIpPrefix(four[1].includes('/') ? four[1] : `${four[1]}/${maskLength(four[2])}`));
    const six = /^server-ipv6 (\S+)$/m.exec(content);
    if (six?.[1] !== undefined) ranges.push(parseIpPrefix(six[1]));
  }
  return ranges;
}

/** The nftables script that replaces the agent's table in one transaction. */
export function natRuleset(ranges: readonly IpPrefix[], mapping: DeterministicNat | null = null): string {
  const lines = [
    `table inet ${NAT_TABLE}`,
    `delete table inet ${NAT_TABLE}`,
    `table inet ${NAT_TABLE} {`,
    ...(mapping === null ? [] : deterministicMaps(mapping)),
    '  chain postrouting {',
    '    type nat hook postrouting priority srcnat; policy accept;',
  ];
  for (const [family, keyword] of [
    [4, 'ip'],
    [6, 'ip6'],
  ] as const) {
    const set = ranges.filter((range) => range.family === family).map(formatIpPrefix);
    if (set.length === 0) continue;
    const elements = `{ ${[...new Set(set)].join(', ')} }`;
    const leaving = `${keyword} saddr ${elements} ${keyword} daddr != ${elements}`;
    if (mapping === null) lines.push(`    ${leaving} masquerade`);
    else if (family === 4) {
      // A client's first packet of a flow takes its address and block; what is left (another
      // protocol, an address outside the mapping) is dropped rather than leaving untranslated.
      lines.push(`    ${leaving} meta l4proto { tcp, udp, icmp } snat ip to ip saddr map @${PORT_MAP}`);
      lines.push(`    ${leaving} counter drop`);
    }
  }
  lines.push('  }', '}');
  return `${lines.join('\n')}\n`;
}

/** The map client address → public address . port block (an interval of ports per client). */
function deterministicMaps(mapping: DeterministicNat): string[] {
  const elements: string[] = [];
  for (const block of mapping.blocks())
    elements.push(`${block.clientAddress} : ${block.publicAddress} . ${block.firstPort}-${block.lastPort}`);
  return [
    `  map ${PORT_MAP} {`,
    '    type ipv4_addr : interval ipv4_addr . inet_service',
    '    flags interval',
    ...(elements.length === 0 ? [] : [`    elements = { ${elements.join(',\n      ')} }`]),
    '  }',
  ];
}

/** The node's forwarding and its nftables table, following the client ranges. */
export class NodeNat {
  #applied: string | null = null;
  #described: NatMode | null = null;
  #refusal: string | null = null;

  constructor(
    /** What node.json asks for; the mapping also needs the client ranges, which the portal sends. */
    private readonly plan: NatSetting,
    private readonly runner: CommandRunner,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** `nat` of `/i/node`: what is programmed, since when; null before the first apply. */
  get described(): NatMode | null {
    return this.#described;
  }

  /** Why the latest client ranges were refused (the previous mapping stays); null when they were not. */
  get refusal(): string | null {
    return this.#refusal;
  }

  /**
   * Makes forwarding and the table match `ranges`; does nothing when they did not change.
   * Ranges that do not fit deterministic NAT throw the first time (the agent refuses to start);
   * later, the mapping in force stays and `refusal` says why.
   */
  async apply(ranges: readonly IpPrefix[]): Promise<void> {
    const next = this.#next(ranges);
    if (next === null) return;
    if (next.ruleset === this.#applied) return;
    await runChecked(this.runner, 'sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
    await runChecked(this.runner, 'sysctl', ['-q', '-w', 'net.ipv6.conf.all.forwarding=1']);
    await runChecked(this.runner, 'nft', ['-f', '-'], { stdin: next.ruleset });
    this.#applied = next.ruleset;
    this.#described = { ...next.described, applied_at: this.clock.now().toISOString() } as NatMode;
    this.logger.info(
      { table: `inet ${NAT_TABLE}`, ranges: ranges.map(formatIpPrefix), nat: this.#described },
      next.described.mode === 'masquerade'
        ? 'forwarding on; client ranges masqueraded (nat)'
        : 'forwarding on; client IPv4 addresses on their fixed public address and port block (deterministic nat)',
    );
  }

  /** The ruleset and description for `ranges`; null when they are refused and a mapping stays in force. */
  #next(ranges: readonly IpPrefix[]): { ruleset: string; described: DescribedMode } | null {
    if (this.plan.mode === 'masquerade') return { ruleset: natRuleset(ranges), described: { mode: 'masquerade' } };
    let mapping: DeterministicNat;
    try {
      mapping = new DeterministicNat({
        ranges: ranges.map(formatIpPrefix),
        publicAddresses: this.plan.publicAddresses,
        portsPerClient: this.plan.portsPerClient,
      });
    } catch (error) {
      if (!(error instanceof NatSettingsError) || this.#applied === null) throw error;
      if (this.#refusal !== error.message)
        this.logger.error(
          { reason: error.message, ranges: ranges.map(formatIpPrefix), inForce: this.#described },
          'the client ranges do not fit deterministic nat; the mapping in force stays (clients of new addresses get no IPv4 beyond the node)',
        );
      this.#refusal = error.message;
      return null;
    }
    this.#refusal = null;
    const { settings } = mapping;
    return {
      ruleset: natRuleset(ranges, mapping),
      described: {
        mode: 'deterministic',
        ranges: [...settings.ranges],
        public_addresses: [...settings.publicAddresses],
        ports_per_client: settings.portsPerClient,
      },
    };
  }

  /** Removes the table (forwarding stays on: other services of the host may rely on it). */
  async remove(): Promise<void> {
    if (this.#applied === null) return;
    this.#applied = null;
    this.#described = null;
    const result = await this.runner.run('nft', ['delete', 'table', 'inet', NAT_TABLE]);
    if (result.exitCode !== 0)
      this.logger.warn({ stderr: result.stderr.trim() }, `could not remove nftables table inet ${NAT_TABLE}`);
  }
}

type DescribedMode = DistributiveOmit<NatMode, 'applied_at'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function maskLength(mask: string): number {
  return mask.split('.').reduce((bits, octet) => bits + (Number(octet).toString(2).match(/1/g)?.length ?? 0), 0);
}
