// What the directory feature (SCIM provisioning) offers the rest of the program; other folders import it only from here.
export {
  applyEditedGroupProfiles,
  applyPendingGroupProfiles,
  GROUP_PROFILES_CALL,
  PENDING_CHECK_GRACE_MS,
} from './group-profiles.js';
export { mappingAtStart, type MappingAtStart } from './mapping-change.js';
export * from './groups.js';
export * from './users.js';
