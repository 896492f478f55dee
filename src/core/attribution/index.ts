// What the attribution feature offers the rest of the program; other folders import it only from here.
export * from './attribution.js';
