// What the sessions feature offers the rest of the program; other folders import it only from here.
export * from './history.js';
export * from './openvpn.js';
export * from './removed-nodes.js';
export * from './statistics.js';
export * from './unlisted-sessions.js';
export * from './wireguard.js';
