// What the reconcile feature offers the rest of the program; other folders import it only from here.
export * from './scheduler.js';
export { expectedListingBytes } from './pass.js';
