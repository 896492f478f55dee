// Every database migration in order, as the tests expect to see them applied: a new migration
// is one more line here (db-commands.test.ts and postgres-scale-out.test.ts read it).
export const EXPECTED_MIGRATIONS = [
  '0001-initial',
  '0002-listing-order',
  '0003-openvpn',
  '0004-revisions',
  '0005-sessions',
  '0006-admin-keys',
  '0007-webhooks',
  '0008-device-keys',
  '0009-enrollment-tokens',
  '0010-listing-generation',
  '0011-admin-key-lineage',
  '0012-audit-refusals',
  '0013-revocations',
  '0014-devices',
  '0015-connection-log-search',
  '0017-console-sessions',
  '0019-console-oidc-sessions',
  '0020-listing-changes',
  '0021-revocation-list-trust',
  '0022-change-markers',
] as const;
