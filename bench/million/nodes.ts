// The million-configuration benchmark's fifty nodes in one process (bench/million.ts starts it,
// so their CPU is not the portal's): `node --import tsx bench/million/nodes.ts FIRST_PORT COUNT
// [DATABASE_URL]` serves node N on FIRST_PORT + N, each a stand-in node (bench/stand-in-node-server.ts).
// With a PostgreSQL URL every node starts with the peers the database wants on it (the enabled
// configurations of its profile), as a fleet that ran before the portal started would; it
// prints `listening` once every node serves.
import pg from 'pg';
import { LISTEN_BACKLOG } from '../../src/shared/listen-backlog.js';
import { standInNodeServer } from '../stand-in-node-server.js';

const firstPort = Number(process.argv[2]);
const count = Number(process.argv[3]);
const databaseUrl = process.argv[4];

const peersOfNode = Array.from({ length: count }, () => new Map<string, readonly string[]>());
if (databaseUrl !== undefined) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ node_number: number; public_key: string; ip_four: string; ip_six: string }>(
      `SELECT p.node_number, p.public_key, p.ip_four, p.ip_six FROM wg_peers p JOIN users u ON u.user_id = p.user_id
       WHERE u.is_disabled = 0`,
    );
    for (const row of rows)
      peersOfNode[row.node_number]?.set(row.public_key, [`${row.ip_four}/32`, `${row.ip_six}/128`]);
  } finally {
    await client.end();
  }
}
const servers = peersOfNode.map((peers) => standInNodeServer(peers));
await Promise.all(
  servers.map(
    (server, node) =>
      new Promise<void>((resolve) =>
        server.listen({ host: '127.0.0.1', port: firstPort + node, backlog: LISTEN_BACKLOG }, resolve),
      ),
  ),
);
console.log('listening');
process.on('SIGTERM', () => {
  for (const server of servers) server.closeAllConnections();
  process.exit(0);
});
