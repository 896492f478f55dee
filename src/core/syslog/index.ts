// What the syslog feature offers the rest of the program; other folders import it only from here.
export * from './collector.js';
