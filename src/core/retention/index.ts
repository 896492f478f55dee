// What the retention feature offers the rest of the program; other folders import it only from here.
export * from './apply.js';
export * from './legal-holds.js';
export * from './registry.js';
