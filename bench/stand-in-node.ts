// A node that speaks eduVPN's vpn-daemon protocol and does nothing else: the benchmark's
// portal pushes every create to it, so the figures include the push, without measuring
// `wg` as well (the agent has its own benchmark, bench/agent.ts). Run as its own process so
// its CPU is not the portal's: `node --import tsx bench/stand-in-node.ts PORT`; it prints
// `listening` once it serves. Peers it was given are kept, so peer_list answers like a node.
import { LISTEN_BACKLOG } from '../src/shared/listen-backlog.js';
import { standInNodeServer } from './stand-in-node-server.js';

const port = Number(process.argv[2]);
const server = standInNodeServer(new Map());
server.listen({ host: '127.0.0.1', port, backlog: LISTEN_BACKLOG }, () => console.log('listening'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
