// What the access feature offers the rest of the program; other folders import it only from here.
export * from './admin-key-calls.js';
export * from './admin-keys.js';
export * from './applied-mapping.js';
export * from './audit.js';
export * from './group-grants.js';
export * from './profile-reach.js';
export * from './oidc-grant.js';
