// What the issuing feature offers the rest of the program; other folders import it only from here.
export * from './create.js';
export * from './extend.js';
export * from './handed-out-again.js';
export * from './protocol-selection.js';
export * from './recent-users.js';
