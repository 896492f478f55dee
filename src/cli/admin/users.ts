// `vpn-portal admin` commands about users: who has a configuration, who is disabled, and
// disabling, enabling, destroying a user or deleting their authorizations.
import type { AdminApiClient } from '../../admin-client/admin-api-client.js';
import { MAX_PAGE_SIZE } from '../../protocol/admin-api-params.js';
import { formatTable } from '../table.js';
import type { AdminCommand } from './command.js';
import { revokingCommand } from './revocations.js';

/** The users, and the disabled ones, with those the directory (SCIM) holds inactive marked. */
export const USER_LIST_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  users: userListCommand('users with a configuration or an authorization', 'users', false),
  'disabled-users': userListCommand('users that are disabled', 'disabled_users', true),
};

function userListCommand(summary: string, field: 'users' | 'disabled_users', disabled: boolean): AdminCommand {
  return {
    summary,
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const { users, directoryInactive } = await everyUser(client, disabled);
      out.print(
        json
          ? JSON.stringify({ [field]: users, directory_inactive: [...directoryInactive] })
          : formatTable(
              ['USER', 'DIRECTORY'],
              users.map((user) => [user, directoryInactive.has(user) ? 'inactive' : '']),
            ),
      );
    },
  };
}

/**
 * Every user (or every disabled one), read page by page, for the directory's word beside each
 * page: a portal that answers without pages (eduVPN's) gives all in one, and none inactive.
 */
async function everyUser(
  client: AdminApiClient,
  disabled: boolean,
): Promise<{ readonly users: string[]; readonly directoryInactive: ReadonlySet<string> }> {
  const users: string[] = [];
  const directoryInactive = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await client.usersPage({
      disabled,
      limit: MAX_PAGE_SIZE,
      ...(cursor === undefined ? {} : { cursor }),
    });
    users.push(...page.users);
    for (const user of page.directory_inactive) directoryInactive.add(user);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return { users, directoryInactive };
}

/** Changes to a user: each takes the user's id. */
export const USER_CHANGE_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  disable: revokingCommand(
    'disable a user: every configuration is taken off the nodes; prints what the revocation receipt says (--wait: until decided)',
    ['USER'],
    ([user = '']) => `disabled ${user}`,
    (client, [user = '']) => client.disableUser(user),
  ),
  enable: userCommand('enabled', 'enable a disabled user again', (client, user) => client.enableUser(user)),
  destroy: revokingCommand(
    'delete a user with every configuration and authorization; prints what the revocation receipt says',
    ['USER'],
    ([user = '']) => `destroyed ${user}`,
    (client, [user = '']) => client.destroy(user),
  ),
  'delete-authorizations': userCommand(
    'deleted the authorizations of',
    "delete a user's OAuth authorizations",
    (client, user) => client.deleteUserAuthorizations(user),
  ),
};

function userCommand(
  done: string,
  summary: string,
  call: (client: AdminApiClient, user: string) => Promise<void>,
): AdminCommand {
  return {
    summary,
    args: ['USER'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const user = args[0] ?? '';
      await call(client, user);
      out.print(json ? JSON.stringify({ ok: true }) : `${done} ${user}`);
    },
  };
}
