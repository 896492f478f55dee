// `vpn-portal admin admin-key …`: listing, creating and revoking admin keys through the Admin API.
import { KEY_SCOPES, type KeyScope } from '../../protocol/admin-api.js';
import { formatTable } from '../table.js';
import { type AdminCommand, UsageError } from './command.js';

export const ADMIN_KEY_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  'admin-key list': {
    summary:
      'the admin keys: scope, profiles, allow-list, expiry, last use and state, never a key (needs a key of scope admin)',
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const keys = await client.adminKeys();
      out.print(
        json
          ? JSON.stringify({ admin_keys: keys })
          : formatTable(
              ['NAME', 'SCOPE', 'PROFILES', 'ALLOW', 'CREATED', 'EXPIRES', 'LAST_USED', 'STATE'],
              keys.map((key) => [
                key.name,
                key.scope,
                key.profiles?.join(',') ?? 'all',
                key.allow_list?.join(',') ?? 'any',
                key.created_at,
                key.expires_at ?? 'never',
                key.last_used_at ?? 'never',
                key.state,
              ]),
            ),
      );
    },
  },
  'admin-key create': {
    summary:
      'an admin key with at most the rights of the calling key (--profile and --allow comma-separated); the key is printed once, on the last line',
    args: ['NAME'],
    flags: ['scope', 'profile', 'expiresIn', 'allow'],
    run: async ({ client, args, flags, json, out }) => {
      const created = await client.createAdminKey({
        name: args[0] ?? '',
        ...(flags.scope === undefined ? {} : { scope: scopeOf(flags.scope) }),
        ...(flags.profile === undefined ? {} : { profiles: flags.profile }),
        ...(flags.expiresIn === undefined ? {} : { expires_in: flags.expiresIn }),
        ...(flags.allow === undefined ? {} : { allow_list: flags.allow }),
      });
      if (json) {
        out.print(JSON.stringify(created));
        return;
      }
      const key = created.admin_key;
      out.print(
        `created admin key "${key.name}" (id ${key.key_id}): scope ${key.scope}; ${key.profiles === null ? 'every profile' : `profiles ${key.profiles.join(', ')}`}; ${key.expires_at === null ? 'never expires' : `expires ${key.expires_at}`}`,
      );
      out.print('this is the only time the key is shown; store it now:');
      out.print(created.secret);
    },
  },
  'admin-key revoke': {
    summary: 'revoke every key of the name, at once (a key revokes only keys within its own limits)',
    args: ['NAME'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const name = args[0] ?? '';
      const revoked = await client.revokeAdminKey(name);
      out.print(json ? JSON.stringify({ name, revoked }) : `revoked ${revoked} key(s) named "${name}"`);
    },
  },
};

/** A `--scope` flag, checked against the key scopes. */
function scopeOf(value: string): KeyScope {
  const scope = KEY_SCOPES.find((candidate) => candidate === value);
  if (scope === undefined) throw new UsageError(`--scope: "${value}" is not one of ${KEY_SCOPES.join(', ')}`);
  return scope;
}
