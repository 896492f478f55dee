// What the enrollment feature offers the rest of the program; other folders import it only from here.
export * from './certificate.js';
export * from './tokens.js';
