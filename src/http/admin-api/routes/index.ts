// The eleven calls of the specification, in its order (§4), then this portal's extensions.
import { adminKeysRoute, createAdminKeyRoute, revokeAdminKeyRoute } from './access/admin-keys.js';
import { auditLogRoute } from './access/audit-log.js';
import { attributionRoute } from './attribution/attribution.js';
import { connectedUsersRoute } from './listings/connected-users.js';
import { connectionListRoute } from './listings/connection-list.js';
import { connectionLogRoute } from './sessions/connection-log.js';
import { createRoute } from './issuing/create.js';
import { deleteConnectionRoute } from './users/delete-connection.js';
import { deleteUserAuthorizationsRoute } from './users/delete-user-authorizations.js';
import { destroyRoute } from './users/destroy.js';
import {
  deviceRoute,
  devicesRoute,
  registerDeviceRoute,
  resumeDeviceRoute,
  retireDeviceRoute,
  suspendDeviceRoute,
} from './devices/devices.js';
import { disableUserRoute } from './users/disable-user.js';
import { disabledUsersRoute } from './listings/disabled-users.js';
import { enableUserRoute } from './users/enable-user.js';
import { enrollmentTokenRoute } from './enrollment/enrollment-token.js';
import { enrollmentTokensRoute } from './enrollment/enrollment-tokens.js';
import { extendRoute } from './issuing/extend.js';
import { profilesRoute } from './listings/profiles.js';
import { createLegalHoldRoute, legalHoldsRoute, releaseLegalHoldRoute } from './retention/legal-holds.js';
import { revokeEnrollmentTokenRoute } from './enrollment/revoke-enrollment-token.js';
import { revocationRoute, revocationsRoute } from './revocations/revocations.js';
import { statsRoute } from './sessions/stats.js';
import { userConfigurationListRoute } from './users/user-configuration-list.js';
import { usersRoute } from './listings/users.js';
import {
  createWebhookRoute,
  deleteWebhookRoute,
  rotateWebhookSecretRoute,
  testWebhookRoute,
  webhookDeliveriesRoute,
  webhooksRoute,
} from './webhooks/webhooks.js';
import type { AdminRoute } from '../admin-route.js';

export const adminRoutes: readonly AdminRoute[] = [
  connectedUsersRoute,
  connectionListRoute,
  usersRoute,
  disabledUsersRoute,
  userConfigurationListRoute,
  createRoute,
  destroyRoute,
  disableUserRoute,
  enableUserRoute,
  deleteConnectionRoute,
  deleteUserAuthorizationsRoute,
  connectionLogRoute,
  attributionRoute,
  statsRoute,
  profilesRoute,
  auditLogRoute,
  extendRoute,
  webhooksRoute,
  createWebhookRoute,
  deleteWebhookRoute,
  rotateWebhookSecretRoute,
  testWebhookRoute,
  webhookDeliveriesRoute,
  enrollmentTokenRoute,
  enrollmentTokensRoute,
  revokeEnrollmentTokenRoute,
  revocationRoute,
  revocationsRoute,
  registerDeviceRoute,
  devicesRoute,
  deviceRoute,
  retireDeviceRoute,
  suspendDeviceRoute,
  resumeDeviceRoute,
  adminKeysRoute,
  createAdminKeyRoute,
  revokeAdminKeyRoute,
  createLegalHoldRoute,
  legalHoldsRoute,
  releaseLegalHoldRoute,
];
