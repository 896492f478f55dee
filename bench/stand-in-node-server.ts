// The request handling of the benchmark's stand-in node (eduVPN's vpn-daemon protocol, peers
// kept in memory and nothing else), shared by bench/stand-in-node.ts (one node per process) and
// bench/million/nodes.ts (fifty nodes in one process, filled from the database at start).
import http from 'node:http';
import { parseAddPeerForm, parseRemovePeerForm, VPN_DAEMON_PATHS } from '../src/protocol/vpn-daemon.js';

/** A node server over `peers` (public key → its ip_net), which add_peer and remove_peer change. */
export function standInNodeServer(peers: Map<string, readonly string[]>): http.Server {
  return http.createServer({ keepAliveTimeout: 60_000 }, (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://node');
      const form = new URLSearchParams(Buffer.concat(chunks).toString());
      const json = (status: number, body: unknown): void => {
        response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      switch (url.pathname) {
        case VPN_DAEMON_PATHS.nodeInfo:
          return json(200, {
            rel_load_average: [0, 0, 0],
            load_average: [0, 0, 0],
            cpu_count: 2,
            node_uptime: 1,
            maintenance_mode: false,
            w_peer_count: peers.size,
            o_client_count: 0,
            v: 'stand-in',
          });
        case VPN_DAEMON_PATHS.peerList:
          return json(200, {
            peer_list: [...peers].map(([key, nets]) => ({ public_key: key, ip_net: nets, bytes_in: 0, bytes_out: 0 })),
          });
        case VPN_DAEMON_PATHS.addPeer: {
          const parsed = parseAddPeerForm(form);
          if (!parsed.ok) return json(400, { error: parsed.error });
          peers.set(parsed.value.publicKey, parsed.value.allowedIps);
          return void response.writeHead(204).end();
        }
        case VPN_DAEMON_PATHS.removePeer: {
          const parsed = parseRemovePeerForm(form);
          if (!parsed.ok) return json(400, { error: parsed.error });
          const nets = peers.get(parsed.value.publicKey);
          peers.delete(parsed.value.publicKey);
          if (nets === undefined) return void response.writeHead(204).end();
          return json(200, { public_key: parsed.value.publicKey, ip_net: nets, bytes_in: 0, bytes_out: 0 });
        }
        case VPN_DAEMON_PATHS.connectionList:
          return json(200, { connection_list: [] });
        default:
          return json(404, { error: 'not found' });
      }
    });
  });
}
