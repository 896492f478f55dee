// What the users feature offers the rest of the program; other folders import it only from here.
export * from './configurations.js';
export * from './delete-authorizations.js';
export * from './delete-connection.js';
export * from './destroy.js';
export * from './disable.js';
export * from './enable.js';
export * from './existing-user.js';
