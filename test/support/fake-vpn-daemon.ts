// A tiny vpn-daemon (reference §6.5) for HTTP tests: it keeps the peers the portal adds and
// removes, and reports the handshake times a test sets. peer_list returns every peer it knows,
// whatever show_all says, so the portal's own 3-minute rule is what the test observes.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakePeer {
  readonly ipNet: readonly string[];
  lastHandshakeTime: Date | null;
}

export interface FakeVpnDaemon {
  readonly url: string;
  readonly peers: Map<string, FakePeer>;
  /** `add_peer`/`remove_peer` calls in arrival order, as `add <key>` / `remove <key>`. */
  readonly calls: string[];
  close(): Promise<void>;
}

export async function startFakeVpnDaemon(): Promise<FakeVpnDaemon> {
  const peers = new Map<string, FakePeer>();
  const calls: string[] = [];
  const server = createServer((request, response) => {
    void readForm(request).then((form) => {
      const url = new URL(request.url ?? '/', 'http://daemon');
      const send = (status: number, body?: unknown) => {
        response.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
        response.end(body === undefined ? undefined : JSON.stringify(body));
      };
      if (request.method === 'GET' && url.pathname === '/i/node') {
        send(200, { rel_load_average: [0, 0, 0], load_average: [0, 0, 0], cpu_count: 1, node_uptime: 1000, maintenance_mode: false });
      } else if (request.method === 'GET' && url.pathname === '/w/peer_list') {
        send(200, {
          peer_list: [...peers].map(([publicKey, peer]) => ({
            public_key: publicKey,
            ip_net: peer.ipNet,
            ...(peer.lastHandshakeTime === null ? {} : { last_handshake_time: peer.lastHandshakeTime.toISOString() }),
            bytes_in: 0,
            bytes_out: 0,
          })),
        });
      } else if (request.method === 'POST' && url.pathname === '/w/add_peer') {
        const publicKey = form.get('public_key') ?? '';
        calls.push(`add ${publicKey}`);
        peers.set(publicKey, { ipNet: form.getAll('ip_net'), lastHandshakeTime: peers.get(publicKey)?.lastHandshakeTime ?? null });
        send(204);
      } else if (request.method === 'POST' && url.pathname === '/w/remove_peer') {
        const publicKey = form.get('public_key') ?? '';
        calls.push(`remove ${publicKey}`);
        send(peers.delete(publicKey) ? 200 : 204, undefined);
      } else {
        send(404, { error: 'not found' });
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    peers,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
