// What the devices feature offers the rest of the program; other folders import it only from here.
export * from './devices.js';
export * from './suspension.js';
export * from './revoked-certificates.js';
export * from './mdm-inventory.js';
export * from './compliance.js';
export * from './revocation-lists.js';
export * from './jamf-push.js';
