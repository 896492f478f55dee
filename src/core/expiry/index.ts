// What the expiry feature offers the rest of the program; other folders import it only from here.
export * from './lifetime.js';
export * from './warnings.js';
