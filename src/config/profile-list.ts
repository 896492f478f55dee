// Checks across the whole `ProfileList`, which no single profile can make: unique ids, client
// ranges that overlap nowhere, one URL per node number, and the peers each node's interface must hold.
import type { NodeNumber } from '../shared/ids.js';
import { prefixesOverlap, type IpPrefix } from '../net/ip-prefix.js';
import { poolCapacity } from '../wireguard/address-pool.js';
import { tryParsePrefix, type Report } from './option-checks.js';
import type { Profile, VpnNode } from './portal-config.js';
import { resolveProfile } from './profile.js';
import type { ParsedProfile } from './schema.js';

/** Every profile resolved, checked against the others, and the nodes they run on. */
export function resolveProfileList(
  raw: readonly ParsedProfile[],
  report: Report,
): { profiles: Profile[]; nodes: ReadonlyMap<NodeNumber, VpnNode> } {
  const profiles = raw.map((profile, index) => resolveProfile(profile, `ProfileList[${index}]`, report));
  checkUniqueProfileIds(profiles, report);
  checkRangesDoNotOverlap(profiles, report);
  const nodes = collectNodes(profiles, report);
  checkPeerCapacity(profiles, report);
  return { profiles, nodes };
}

function checkUniqueProfileIds(profiles: readonly Profile[], report: Report): void {
  const seen = new Set<string>();
  for (const [index, profile] of profiles.entries()) {
    if (seen.has(profile.profileId))
      report(`ProfileList[${index}].profileId`, `"${profile.profileId}" is used by another profile`);
    seen.add(profile.profileId);
  }
}

/**
 * WireGuard client addresses are unique across the whole database, and OpenVPN ranges share
 * the nodes' routing tables with them, so no two client ranges may overlap anywhere.
 */
function checkRangesDoNotOverlap(profiles: readonly Profile[], report: Report): void {
  const ranges: { label: string; prefix: IpPrefix }[] = [];
  for (const profile of profiles) {
    for (const node of profile.nodes) {
      const texts = [
        node.wireGuard?.rangeFour,
        node.wireGuard?.rangeSix,
        node.openVpn?.rangeFour,
        node.openVpn?.rangeSix,
      ];
      for (const text of texts) {
        if (text === undefined) continue;
        const prefix = tryParsePrefix(text);
        if (prefix === null) continue;
        const label = `${profile.profileId} on node ${node.nodeNumber} (${text})`;
        const clash = ranges.find((other) => prefixesOverlap(other.prefix, prefix));
        if (clash !== undefined) report('ProfileList', `client range of ${label} overlaps ${clash.label}`);
        ranges.push({ label, prefix });
      }
    }
  }
}

function collectNodes(profiles: readonly Profile[], report: Report): ReadonlyMap<NodeNumber, VpnNode> {
  const nodes = new Map<NodeNumber, VpnNode>();
  for (const profile of profiles) {
    for (const { nodeNumber, nodeUrl } of profile.nodes) {
      const known = nodes.get(nodeNumber);
      if (known === undefined) nodes.set(nodeNumber, { nodeNumber, nodeUrl });
      else if (known.nodeUrl !== nodeUrl) {
        report(
          `ProfileList (${profile.profileId}).nodeUrl`,
          `node ${nodeNumber} is ${known.nodeUrl} in another profile, not ${nodeUrl}`,
        );
      }
    }
  }
  return nodes;
}

/**
 * A WireGuard interface holds at most 1,048,576 peers (kernel), 65,536 with wireguard-go: the
 * ranges of all profiles on a node must fit the kernel's limit (the agent checks the smaller
 * one when it runs wireguard-go), or creates would fail there one day.
 */
function checkPeerCapacity(profiles: readonly Profile[], report: Report): void {
  const perNode = new Map<NodeNumber, { total: number; profiles: string[] }>();
  for (const profile of profiles) {
    for (const node of profile.nodes) {
      if (node.wireGuard === null) continue;
      let capacity: number;
      try {
        capacity = poolCapacity(node.wireGuard.rangeFour, node.wireGuard.rangeSix);
      } catch {
        continue; // reported by checkPoolFits
      }
      const entry = perNode.get(node.nodeNumber) ?? { total: 0, profiles: [] };
      entry.total += capacity;
      entry.profiles.push(`${profile.profileId} (${capacity})`);
      perNode.set(node.nodeNumber, entry);
    }
  }
  for (const [nodeNumber, { total, profiles: names }] of perNode) {
    if (total > KERNEL_PEER_LIMIT) {
      report(
        'ProfileList',
        `the WireGuard ranges of node ${nodeNumber} hold ${total} clients (${names.join(', ')}), more than a WireGuard interface holds (${KERNEL_PEER_LIMIT}): use smaller wRangeFour ranges`,
      );
    }
  }
}

/** Peers one kernel WireGuard interface holds. */
const KERNEL_PEER_LIMIT = 1_048_576;
