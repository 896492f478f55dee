// `vpn-portal admin` commands about users: who has a configuration, who is disabled, and
// disabling, enabling, destroying a user or deleting their authorizations.
import type { AdminApiClient } from '../../admin-client/admin-api-client.js';
import { formatTable } from '../table.js';
import type { AdminCommand } from './command.js';
import { revokingCommand } from './revocations.js';

/** The users, and the disabled ones. */
export const USER_LIST_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  users: {
    summary: 'users with a configuration or an authorization',
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const users = await client.users();
      out.print(
        json
          ? JSON.stringify({ users })
          : formatTable(
              ['USER'],
              users.map((user) => [user]),
            ),
      );
    },
  },
  'disabled-users': {
    summary: 'users that are disabled',
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const users = await client.disabledUsers();
      out.print(
        json
          ? JSON.stringify({ disabled_users: users })
          : formatTable(
              ['USER'],
              users.map((user) => [user]),
            ),
      );
    },
  },
};

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
