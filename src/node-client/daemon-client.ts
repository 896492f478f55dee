// The portal's client for a node's vpn-daemon HTTP protocol (reference §6.5, §8.5): node
// info, WireGuard peer list with handshakes, add and remove peer, OpenVPN client list and
// disconnect. It speaks to our own node agent and to
// an existing eduVPN vpn-daemon alike. Requests carry `Authorization: Bearer <node key>`
// when the portal has a key file for that node. Timeouts are short: a node that does not
// answer must never hold up an Admin API call for long.
import type { NodeNumber, WireGuardKey } from '../shared/ids.js';

export interface DaemonPeer {
  readonly publicKey: WireGuardKey;
  readonly ipNet: readonly string[];
  /** null when the node has seen no handshake from this peer. */
  readonly lastHandshakeTime: Date | null;
  readonly bytesIn: number;
  readonly bytesOut: number;
}

/** A client connected to one of the node's OpenVPN processes (reference §8.5). */
export interface DaemonOpenVpnClient {
  readonly commonName: string;
  readonly ipFour: string;
  readonly ipSix: string | null;
}

export interface DaemonNodeInfo {
  /** Seconds since the node's host booted. */
  readonly nodeUptime: number;
  readonly maintenanceMode: boolean;
  /**
   * Our agent's `instance_id`: a new value whenever the node lost its peers (agent start,
   * wireguard-go restart). Null from a daemon that does not report one (eduVPN's vpn-daemon).
   */
  readonly instanceId: string | null;
  /** Our agent's highest applied revision; null from a daemon that does not report one. */
  readonly maxRevision: number | null;
}

/** What the core needs from a node; one instance per node. */
export interface NodeDaemon {
  readonly nodeNumber: NodeNumber;
  readonly url: string;
  nodeInfo(): Promise<DaemonNodeInfo>;
  peerList(showAll: boolean): Promise<DaemonPeer[]>;
  /** `revision` orders instructions for one key: our agent ignores one older than the last it applied. */
  addPeer(publicKey: WireGuardKey, ipNet: readonly string[], revision: number): Promise<void>;
  removePeer(publicKey: WireGuardKey, revision: number): Promise<void>;
  openVpnConnectionList(): Promise<DaemonOpenVpnClient[]>;
  /** Disconnects every client with this certificate Common Name. */
  disconnectClient(commonName: string): Promise<void>;
}

export class NodeDaemonError extends Error {
  override readonly name = 'NodeDaemonError';
}

export interface HttpNodeDaemonOptions {
  readonly nodeNumber: NodeNumber;
  readonly url: string;
  /** Reads the node secret; null sends no Authorization header (e.g. a vpn-daemon behind mutual TLS). */
  readonly secret: () => string | null;
  readonly timeoutMs: number;
}

export class HttpNodeDaemon implements NodeDaemon {
  readonly nodeNumber: NodeNumber;
  readonly url: string;

  constructor(private readonly options: HttpNodeDaemonOptions) {
    this.nodeNumber = options.nodeNumber;
    this.url = options.url;
  }

  async nodeInfo(): Promise<DaemonNodeInfo> {
    const body = await this.requestJson('GET', '/i/node');
    return {
      nodeUptime: numberField(body, 'node_uptime'),
      maintenanceMode: isRecord(body) && body['maintenance_mode'] === true,
      instanceId: isRecord(body) && typeof body['instance_id'] === 'string' ? body['instance_id'] : null,
      maxRevision: isRecord(body) && Number.isSafeInteger(body['max_revision']) ? (body['max_revision'] as number) : null,
    };
  }

  async peerList(showAll: boolean): Promise<DaemonPeer[]> {
    const body = await this.requestJson('GET', `/w/peer_list?show_all=${showAll ? 'yes' : 'no'}`);
    const list = isRecord(body) ? body['peer_list'] : undefined;
    if (!Array.isArray(list)) throw new NodeDaemonError(`${this.url}: peer_list answer has no "peer_list" array`);
    return list.map((entry: unknown) => this.toPeer(entry));
  }

  async addPeer(publicKey: WireGuardKey, ipNet: readonly string[], revision: number): Promise<void> {
    const form = new URLSearchParams({ public_key: publicKey });
    for (const net of ipNet) form.append('ip_net', net);
    // An extra field: eduVPN's vpn-daemon ignores it, our agent orders instructions by it.
    form.append('revision', String(revision));
    await this.request('POST', '/w/add_peer', form);
  }

  async removePeer(publicKey: WireGuardKey, revision: number): Promise<void> {
    await this.request('POST', '/w/remove_peer', new URLSearchParams({ public_key: publicKey, revision: String(revision) }));
  }

  async openVpnConnectionList(): Promise<DaemonOpenVpnClient[]> {
    const body = await this.requestJson('GET', '/o/connection_list');
    const list = isRecord(body) ? body['connection_list'] : undefined;
    if (!Array.isArray(list)) throw new NodeDaemonError(`${this.url}: connection_list answer has no "connection_list" array`);
    return list.map((entry: unknown) => {
      if (!isRecord(entry) || typeof entry['common_name'] !== 'string' || typeof entry['ip_four'] !== 'string') {
        throw new NodeDaemonError(`${this.url}: malformed client in connection_list`);
      }
      const ipSix = entry['ip_six'];
      return { commonName: entry['common_name'], ipFour: entry['ip_four'], ipSix: typeof ipSix === 'string' && ipSix !== '' ? ipSix : null };
    });
  }

  async disconnectClient(commonName: string): Promise<void> {
    await this.request('POST', '/o/disconnect_client', new URLSearchParams({ common_name: commonName }));
  }

  private toPeer(entry: unknown): DaemonPeer {
    if (!isRecord(entry) || typeof entry['public_key'] !== 'string' || !Array.isArray(entry['ip_net'])) {
      throw new NodeDaemonError(`${this.url}: malformed peer in peer_list`);
    }
    const handshake = entry['last_handshake_time'];
    const handshakeDate = typeof handshake === 'string' ? new Date(handshake) : null;
    return {
      publicKey: entry['public_key'] as WireGuardKey,
      ipNet: entry['ip_net'].filter((net): net is string => typeof net === 'string'),
      lastHandshakeTime: handshakeDate !== null && !Number.isNaN(handshakeDate.getTime()) ? handshakeDate : null,
      bytesIn: typeof entry['bytes_in'] === 'number' ? entry['bytes_in'] : 0,
      bytesOut: typeof entry['bytes_out'] === 'number' ? entry['bytes_out'] : 0,
    };
  }

  private async requestJson(method: 'GET' | 'POST', path: string): Promise<unknown> {
    const response = await this.request(method, path);
    try {
      return await response.json();
    } catch {
      throw new NodeDaemonError(`${this.url}${path}: answer is not JSON`);
    }
  }

  private async request(method: 'GET' | 'POST', path: string, form?: URLSearchParams): Promise<Response> {
    const headers: Record<string, string> = {};
    const secret = this.options.secret();
    if (secret !== null) headers['authorization'] = `Bearer ${secret}`;
    let response: Response;
    try {
      response = await fetch(`${this.url}${path}`, {
        method,
        headers,
        body: form,
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : (error as Error).message;
      throw new NodeDaemonError(`node ${this.nodeNumber} (${this.url}) unreachable: ${cause}`);
    }
    if (!response.ok) {
      const detail = await response.text().catch(() => '');
      throw new NodeDaemonError(`node ${this.nodeNumber} (${this.url}${path}) answered ${response.status} ${detail.slice(0, 200)}`);
    }
    return response;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function numberField(body: unknown, name: string): number {
  const value = isRecord(body) ? body[name] : undefined;
  return typeof value === 'number' ? value : 0;
}
