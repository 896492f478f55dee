// What the nodes feature offers the rest of the program; other folders import it only from here.
export * from './addresses.js';
export * from './openvpn-clients.js';
export * from './openvpn-server-files.js';
export * from './order.js';
export * from './peers.js';
export * from './read-age.js';
export * from './wireguard-settings.js';
export * from './nat-history.js';
export * from './removed-nodes-nat.js';
