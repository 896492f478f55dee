// `/i/node`: what the portal learns about this node (load, uptime, counts, and our instance id and
// highest revision, with which the portal notices a restart or another database).
import { availableParallelism, loadavg, uptime } from 'node:os';

/** The `/i/node` answer of the vpn-daemon protocol. */
export interface NodeInfo {
  /** Load average per CPU, in percent. */
  readonly rel_load_average: readonly number[];
  readonly load_average: readonly number[];
  readonly cpu_count: number;
  /** Seconds since the host booted. */
  readonly node_uptime: number;
  readonly maintenance_mode: boolean;
  readonly w_peer_count: number;
  readonly o_client_count: number;
  /** OpenVPN server processes the agent runs (ours; not in the reference's daemon). */
  readonly o_process_count: number;
  /**
   * Ours: a new value whenever this node lost its WireGuard peers (the agent started, or
   * wireguard-go was restarted), so the portal reconciles the node at once.
   */
  readonly instance_id: string;
  /** Ours: the highest peer instruction revision this agent has applied (0: none since it started). */
  readonly max_revision: number;
  readonly v: string;
}

export interface NodeCounts {
  readonly wireGuardPeers: number;
  readonly openVpnClients?: number;
  readonly openVpnProcesses?: number;
}

export interface AgentIdentity {
  readonly instanceId: string;
  readonly maxRevision: number;
}

export function describeNode(counts: NodeCounts, version: string, identity: AgentIdentity): NodeInfo {
  const cpuCount = availableParallelism();
  const loadAverage = loadavg();
  return {
    rel_load_average: loadAverage.map((load) => Math.round((100 * load) / cpuCount)),
    load_average: loadAverage.map((load) => Math.round(load * 100) / 100),
    cpu_count: cpuCount,
    node_uptime: Math.floor(uptime()),
    maintenance_mode: false,
    w_peer_count: counts.wireGuardPeers,
    o_client_count: counts.openVpnClients ?? 0,
    o_process_count: counts.openVpnProcesses ?? 0,
    instance_id: identity.instanceId,
    max_revision: identity.maxRevision,
    v: version,
  };
}
