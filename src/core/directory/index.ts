// What the directory feature (SCIM provisioning) offers the rest of the program; other folders import it only from here.
export * from './groups.js';
export * from './users.js';
