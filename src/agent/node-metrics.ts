// The node agent's Prometheus metrics, read when Prometheus scrapes: WireGuard peers (all, and
// those with a handshake in the last 3 minutes), writes of peer changes to the interface,
// OpenVPN processes and clients, bytes through each VPN interface (the kernel's counters), and
// open ProxyGuard tunnels; with NAT, whether the client ranges were refused by deterministic NAT
// and the new connections the kernel dropped for want of a free source port.
import { readFile } from 'node:fs/promises';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { isOnline } from '../shared/online.js';
import type { Clock } from '../shared/time.js';
import type { WgPeer } from './wireguard/dump.js';
import type { PeerWriteMethod } from './wireguard/peer-writer.js';

export interface AgentMetricSources {
  readonly clock: Clock;
  /** The WireGuard interface and its peers; null while the node has no WireGuard profile. */
  wireGuard(): Promise<{ readonly name: string; readonly peers: readonly WgPeer[] } | null>;
  /** Writes of peer changes to the WireGuard interface since start, by method; null without one. */
  peerWrites(): { readonly name: string; readonly writes: Readonly<Record<PeerWriteMethod, number>> } | null;
  /** Every OpenVPN process's tun device and its connected clients. */
  openVpn(): readonly { readonly device: string; readonly clients: number }[];
  /** Open ProxyGuard tunnels; null while the relay does not run. */
  proxyGuardTunnels(): number | null;
  /** The node's NAT; null when node.json has none (no NAT metric then). */
  readonly nat?: (() => { readonly refused: boolean }) | null;
}

/** The kernel's connection tracking statistics of the agent's network namespace, one line per CPU. */
const CONNTRACK_STATISTICS = '/proc/net/stat/nf_conntrack';

export function agentMetricsRegistry(sources: AgentMetricSources): Registry {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  // Read once per scrape by the first collector, shared by the others.
  let snapshot: Promise<Awaited<ReturnType<AgentMetricSources['wireGuard']>>> | null = null;
  const wireGuard = (): Promise<Awaited<ReturnType<AgentMetricSources['wireGuard']>>> => {
    snapshot ??= sources.wireGuard().finally(() => setTimeout(() => (snapshot = null), 0));
    return snapshot;
  };
  new Gauge({
    name: 'vpn_node_wireguard_peers',
    help: 'Peers on the WireGuard interface',
    labelNames: ['interface'] as const,
    registers,
    async collect() {
      this.reset();
      const state = await wireGuard();
      if (state !== null) this.set({ interface: state.name }, state.peers.length);
    },
  });
  new Gauge({
    name: 'vpn_node_wireguard_peers_online',
    help: 'Peers with a handshake in the last 3 minutes',
    labelNames: ['interface'] as const,
    registers,
    async collect() {
      this.reset();
      const state = await wireGuard();
      if (state === null) return;
      const now = sources.clock.now();
      this.set({ interface: state.name }, state.peers.filter((peer) => isOnline(peer.latestHandshake, now)).length);
    },
  });
  // On a steady node this stays still: every write of a peer resets its handshake state.
  new Counter({
    name: 'vpn_node_wireguard_peer_writes_total',
    help: 'Writes of peer changes to the WireGuard interface: set operations on the control socket of wireguard-go (method="uapi"), `wg set` processes (method="wg")',
    labelNames: ['interface', 'method'] as const,
    registers,
    collect() {
      this.reset();
      const state = sources.peerWrites();
      if (state === null) return;
      for (const [method, writes] of Object.entries(state.writes)) this.inc({ interface: state.name, method }, writes);
    },
  });
  new Gauge({
    name: 'vpn_node_openvpn_clients',
    help: 'Connected OpenVPN clients, by tun device (one per OpenVPN process)',
    labelNames: ['interface'] as const,
    registers,
    collect() {
      this.reset();
      for (const { device, clients } of sources.openVpn()) this.set({ interface: device }, clients);
    },
  });
  const interfaces = async (): Promise<string[]> => {
    const state = await wireGuard();
    return [...(state === null ? [] : [state.name]), ...sources.openVpn().map(({ device }) => device)];
  };
  for (const [direction, file] of [
    ['receive', 'rx_bytes'],
    ['transmit', 'tx_bytes'],
  ] as const) {
    new Gauge({
      name: `vpn_node_interface_${direction}_bytes`,
      help: `Bytes ${direction === 'receive' ? 'received' : 'sent'} on each VPN interface since it was created (the kernel's counter)`,
      labelNames: ['interface'] as const,
      registers,
      async collect() {
        this.reset();
        for (const name of await interfaces()) {
          const bytes = await readCounter(name, file);
          if (bytes !== null) this.set({ interface: name }, bytes);
        }
      },
    });
  }
  new Gauge({
    name: 'vpn_node_proxyguard_tunnels',
    help: 'Open WireGuard-over-TCP tunnels of the ProxyGuard relay (0 while it does not run)',
    registers,
    collect() {
      this.set(sources.proxyGuardTunnels() ?? 0);
    },
  });
  if (sources.nat != null) natMetrics(registers, sources.nat);
  return registry;
}

function natMetrics(registers: Registry[], nat: () => { readonly refused: boolean }): void {
  new Gauge({
    name: 'vpn_node_nat_ranges_refused',
    help: 'Deterministic NAT: 1 while the client ranges the portal sent do not fit the public addresses and portsPerClient, so the previous mapping stays in force (the log says why)',
    registers,
    collect() {
      this.set(nat().refused ? 1 : 0);
    },
  });
  // Where a translation finds no free source port in its range (a deterministic NAT client's
  // block used up towards one destination) the kernel drops the packet when it confirms the
  // connection and counts it here; no other case is common on a NAT node.
  new Counter({
    name: 'vpn_node_conntrack_insert_failed_total',
    help: "Packets that opened a connection and were dropped because their translated addresses and ports were taken (a client's port block used up; each retransmission counts), the kernel's conntrack insert_failed of the node's network namespace",
    registers,
    async collect() {
      this.reset();
      const failed = await readInsertFailed();
      if (failed !== null) this.inc(failed);
    },
  });
}

/** The sum over CPUs of conntrack's insert_failed; null when conntrack is not loaded. */
async function readInsertFailed(): Promise<number | null> {
  let text: string;
  try {
    text = await readFile(CONNTRACK_STATISTICS, 'utf8');
  } catch {
    return null;
  }
  const [header, ...rows] = text.trim().split('\n');
  const column = header?.trim().split(/\s+/).indexOf('insert_failed') ?? -1;
  if (column === -1) return null;
  return rows.reduce((sum, row) => sum + Number.parseInt(row.trim().split(/\s+/)[column] ?? '0', 16), 0);
}

/** A counter of /sys/class/net/IF/statistics; null for an interface that is not there (yet). */
async function readCounter(name: string, file: string): Promise<number | null> {
  if (!/^[a-zA-Z0-9_=+.-]{1,15}$/.test(name)) return null;
  try {
    return Number((await readFile(`/sys/class/net/${name}/statistics/${file}`, 'utf8')).trim());
  } catch {
    return null;
  }
}
