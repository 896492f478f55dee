// What the console feature offers the rest of the program; other folders import it only from here.
export * from './sessions.js';
