// Full tunnel on the node (`"nat": true` in node.json): profiles default to `defaultGateway`,
// so clients send everything to the node, which must forward it and hide the client ranges
// behind its own address. The agent turns IP forwarding on and keeps one nftables table of its
// own, `inet vpn_portal_nat`, that masquerades traffic from every client range of this node
// (WireGuard and OpenVPN, IPv4 and IPv6) leaving for anywhere but those ranges. The table is
// replaced atomically when the ranges change and removed when the agent stops; the rest of the
// host's firewall is not touched.
import type { Logger } from 'pino';
import { formatIpPrefix, parseIpPrefix, type IpPrefix } from '../net/ip-prefix.js';
import { runChecked, type CommandRunner } from './process/command-runner.js';
import type { NodeServerConfig } from './node-assignment.js';

export const NAT_TABLE = 'vpn_portal_nat';

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
export function natRuleset(ranges: readonly IpPrefix[]): string {
  const lines = [
    `table inet ${NAT_TABLE}`,
    `delete table inet ${NAT_TABLE}`,
    `table inet ${NAT_TABLE} {`,
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
    lines.push(`    ${keyword} saddr ${elements} ${keyword} daddr != ${elements} masquerade`);
  }
  lines.push('  }', '}');
  return `${lines.join('\n')}\n`;
}

export class NodeNat {
  #applied: string | null = null;

  constructor(
    private readonly runner: CommandRunner,
    private readonly logger: Logger,
  ) {}

  /** Makes forwarding and the masquerade table match `ranges`; does nothing when they did not change. */
  async apply(ranges: readonly IpPrefix[]): Promise<void> {
    const ruleset = natRuleset(ranges);
    if (ruleset === this.#applied) return;
    await runChecked(this.runner, 'sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1']);
    await runChecked(this.runner, 'sysctl', ['-q', '-w', 'net.ipv6.conf.all.forwarding=1']);
    await runChecked(this.runner, 'nft', ['-f', '-'], { stdin: ruleset });
    this.#applied = ruleset;
    this.logger.info(
      { table: `inet ${NAT_TABLE}`, ranges: ranges.map(formatIpPrefix) },
      'forwarding on; client ranges masqueraded (nat)',
    );
  }

  /** Removes the table (forwarding stays on: other services of the host may rely on it). */
  async remove(): Promise<void> {
    if (this.#applied === null) return;
    this.#applied = null;
    const result = await this.runner.run('nft', ['delete', 'table', 'inet', NAT_TABLE]);
    if (result.exitCode !== 0)
      this.logger.warn({ stderr: result.stderr.trim() }, `could not remove nftables table inet ${NAT_TABLE}`);
  }
}

function maskLength(mask: string): number {
  return mask.split('.').reduce((bits, octet) => bits + (Number(octet).toString(2).match(/1/g)?.length ?? 0), 0);
}
