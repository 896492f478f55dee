// The stand-in nodes of bench/listing-heap.ts, in one process of their own (uncapped, so that
// only the portal's heap is measured): `node --import tsx bench/listing-heap-nodes.ts FIRST_PORT
// PEERS_FILE` serves node N on FIRST_PORT + N. Each lists the peers the file gives it (what the
// portal's database wants there: a pass finds nothing to change) as our agent lists a node whose
// devices were all online lately, every entry with a handshake time, counters and an endpoint
// (some 230 bytes), answered from one body made at start. Prints `listening` once every node serves.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { VPN_DAEMON_PATHS } from '../src/protocol/vpn-daemon.js';

/** Per node: each peer's public key, IPv4 and IPv6 address. */
export type ListingHeapPeers = readonly (readonly [string, string, string])[][];

const firstPort = Number(process.argv[2]);
const peersOfNode = JSON.parse(readFileSync(String(process.argv[3]), 'utf8')) as ListingHeapPeers;

function listingBody(peers: readonly (readonly [string, string, string])[]): Buffer {
  // Ten minutes ago: offline devices, so that a pass has no sessions to open (the listing is as long).
  const handshake = new Date(Date.now() - 600_000).toISOString().replace(/\.\d+Z$/, '+00:00');
  const entries = peers.map(([publicKey, four, six], index) =>
    JSON.stringify({
      public_key: publicKey,
      ip_net: [`${four}/32`, `${six}/128`],
      last_handshake_time: handshake,
      bytes_in: 1_234_567_890 + index,
      bytes_out: 9_876_543_210 + index,
      endpoint: `198.51.100.${index % 256}:${10_000 + (index % 50_000)}`,
    }),
  );
  return Buffer.from(`{"peer_list":[${entries.join(',')}]}`);
}

const servers = peersOfNode.map((peers) => {
  const body = listingBody(peers);
  const info = JSON.stringify({
    rel_load_average: [0, 0, 0],
    load_average: [0, 0, 0],
    cpu_count: 2,
    node_uptime: 1,
    maintenance_mode: false,
    w_peer_count: peers.length,
    o_client_count: 0,
    v: 'stand-in',
  });
  return http.createServer({ keepAliveTimeout: 60_000 }, (request, response) => {
    request.resume();
    request.on('end', () => {
      const pathname = new URL(request.url ?? '/', 'http://node').pathname;
      if (pathname === VPN_DAEMON_PATHS.nodeInfo)
        response.writeHead(200, { 'content-type': 'application/json' }).end(info);
      else if (pathname === VPN_DAEMON_PATHS.peerList)
        response.writeHead(200, { 'content-type': 'application/json' }).end(body);
      else if (pathname === VPN_DAEMON_PATHS.connectionList)
        response.writeHead(200, { 'content-type': 'application/json' }).end('{"connection_list":[]}');
      else response.writeHead(204).end();
    });
  });
});
await Promise.all(
  servers.map(
    (server, node) =>
      new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: firstPort + node }, resolve)),
  ),
);
console.log('listening');
process.on('SIGTERM', () => {
  for (const server of servers) server.closeAllConnections();
  process.exit(0);
});
