// The eleven calls of the specification, in its order (§4), then this portal's extensions.
import { adminKeysRoute, createAdminKeyRoute, revokeAdminKeyRoute } from './admin-keys.js';
import { auditLogRoute } from './audit-log.js';
import { connectedUsersRoute } from './connected-users.js';
import { connectionListRoute } from './connection-list.js';
import { connectionLogRoute } from './connection-log.js';
import { createRoute } from './create.js';
import { deleteConnectionRoute } from './delete-connection.js';
import { deleteUserAuthorizationsRoute } from './delete-user-authorizations.js';
import { destroyRoute } from './destroy.js';
import { deviceRoute, devicesRoute, registerDeviceRoute, retireDeviceRoute } from './devices.js';
import { disableUserRoute } from './disable-user.js';
import { disabledUsersRoute } from './disabled-users.js';
import { enableUserRoute } from './enable-user.js';
import { enrollmentTokenRoute } from './enrollment-token.js';
import { enrollmentTokensRoute } from './enrollment-tokens.js';
import { extendRoute } from './extend.js';
import { profilesRoute } from './profiles.js';
import { revokeEnrollmentTokenRoute } from './revoke-enrollment-token.js';
import { revocationRoute, revocationsRoute } from './revocations.js';
import { statsRoute } from './stats.js';
import { userConfigurationListRoute } from './user-configuration-list.js';
import { usersRoute } from './users.js';
import {
  createWebhookRoute,
  deleteWebhookRoute,
  rotateWebhookSecretRoute,
  testWebhookRoute,
  webhookDeliveriesRoute,
  webhooksRoute,
} from './webhooks.js';
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
  adminKeysRoute,
  createAdminKeyRoute,
  revokeAdminKeyRoute,
];
