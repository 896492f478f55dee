// What a create costs the portal's stack before it does anything of its own, measured in the
// same run as the creates: a Fastify server made like the portal's (form bodies, no line per
// request), whose one route reads the form, pushes one add_peer to the stand-in node through
// the portal's own node client (the kept-open undici pool) and answers a file of a create's
// size. No key pair, no database, no rendering, no audit. Its own process, so its CPU can be
// read from /proc: `node --import tsx bench/floor-server.ts PORT NODE_PORT`; prints
// `listening` once it serves.
import formbody from '@fastify/formbody';
import Fastify from 'fastify';
import { HttpNodeDaemon } from '../src/node-client/daemon-client.js';
import { asNodeNumber, asWireGuardKey } from '../src/shared/ids.js';

const [port, nodePort] = process.argv.slice(2).map(Number);
const daemon = new HttpNodeDaemon({
  nodeNumber: asNodeNumber(0),
  url: `http://127.0.0.1:${nodePort}`,
  secret: () => 'stand-in',
  timeoutMs: 10_000,
});
const file = `[Interface]\nPrivateKey = ${'A'.repeat(43)}=\nAddress = 10.64.0.2/14,fd64::2/64\n\n[Peer]\nPublicKey = ${'B'.repeat(43)}=\nAllowedIPs = 0.0.0.0/0,::/0\nEndpoint = vpn.example.org:51820`;
// A canonical key: the node refuses one whose last character carries bits beyond the 32 bytes.
const key = asWireGuardKey(`${'C'.repeat(42)}A=`);

const app = Fastify({ logger: false, exposeHeadRoutes: false, bodyLimit: 65_536 });
app.removeAllContentTypeParsers();
void app.register(formbody, { bodyLimit: 65_536 });
app.post('/vpn-user-portal/admin/api/v1/create', async (request, reply) => {
  const form = request.body as Record<string, string>;
  if (typeof form['user_id'] !== 'string') return reply.code(400).send({ error: 'missing "user_id"' });
  await daemon.addPeer(key, ['10.64.0.2/32', 'fd64::2/128'], 1);
  return reply.type('application/x-wireguard-profile').send(file);
});
app.get('/vpn-user-portal/admin/api/v1/users', async () => ({ users: [] }));
await app.listen({ host: '127.0.0.1', port: port ?? 0 });
console.log('listening');
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
