// What the revocations feature offers the rest of the program; other folders import it only from here.
export * from './deadlines.js';
export * from './receipts.js';
export * from './grouped-confirmations.js';
