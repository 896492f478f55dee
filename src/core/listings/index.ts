// What the listings feature offers the rest of the program; other folders import it only from here.
export * from './cache.js';
export * from './connections.js';
export * from './profiles.js';
export * from './users.js';
