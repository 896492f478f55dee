// `/i/node`: what the portal learns about this node (load, uptime, counts, and our instance id and
// highest revision, with which the portal notices a restart or another database).
import { availableParallelism, loadavg, uptime } from 'node:os';
import { MAX_PEERS_PER_ADD, type NatMode, type NodeInfo } from '../../protocol/vpn-daemon.js';

export interface NodeCounts {
  readonly wireGuardPeers: number;
  readonly openVpnClients?: number;
  readonly openVpnProcesses?: number;
}

export interface AgentIdentity {
  readonly instanceId: string;
  readonly maxRevision: number;
  readonly maintenanceMode: boolean;
  /** The NAT the node programmed and since when; null when it does none. */
  readonly nat: NatMode | null;
}

/** Ours always reports its extensions (instance id, highest revision, process count, add_peers); NAT when it translates. */
export function describeNode(
  counts: NodeCounts,
  version: string,
  identity: AgentIdentity,
): Required<Omit<NodeInfo, 'nat'>> & Pick<NodeInfo, 'nat'> {
  const cpuCount = availableParallelism();
  const loadAverage = loadavg();
  return {
    rel_load_average: loadAverage.map((load) => Math.round((100 * load) / cpuCount)),
    load_average: loadAverage.map((load) => Math.round(load * 100) / 100),
    cpu_count: cpuCount,
    node_uptime: Math.floor(uptime()),
    maintenance_mode: identity.maintenanceMode,
    w_peer_count: counts.wireGuardPeers,
    o_client_count: counts.openVpnClients ?? 0,
    o_process_count: counts.openVpnProcesses ?? 0,
    instance_id: identity.instanceId,
    max_revision: identity.maxRevision,
    add_peers_max: MAX_PEERS_PER_ADD,
    ...(identity.nat === null ? {} : { nat: identity.nat }),
    v: version,
  };
}
