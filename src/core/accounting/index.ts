// What the accounting feature offers the rest of the program; other folders import it only from here.
export * from './outbox.js';
export * from './records.js';
export * from './worker.js';
