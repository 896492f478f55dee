// `vpn-portal admin` commands about enrollment tokens: making one, listing them, revoking one.
import { formatTable } from '../table.js';
import { type AdminCommand, deviceFlags, UsageError } from './command.js';

export const ENROLLMENT_TOKEN_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  'enrollment-token': {
    summary:
      "a token a device redeems at {baseUrl}enroll with its own key (an extension); printed once, on the last line; --device-id, --serial or --mdm-id: its configuration is that registered device's",
    args: ['USER', 'PROFILE'],
    flags: ['uses', 'validFor', 'expiresIn', 'displayName', 'deviceId', 'serial', 'mdmId'],
    run: async ({ client, args, flags, json, out }) => {
      const [user = '', profile = ''] = args;
      const uses = flags.uses === undefined ? undefined : Number(flags.uses);
      if (uses !== undefined && !(Number.isInteger(uses) && uses >= 1))
        throw new UsageError(`--uses: "${flags.uses}" is not a number of uses (1–1000)`);
      const made = await client.enrollmentToken({
        user_id: user,
        profile_id: profile,
        ...(uses === undefined ? {} : { uses }),
        ...(flags.validFor === undefined ? {} : { valid_for: flags.validFor }),
        ...(flags.expiresIn === undefined ? {} : { expires_in: flags.expiresIn }),
        ...(flags.displayName === undefined ? {} : { display_name: flags.displayName }),
        ...deviceFlags(flags, 'enrollment-token'),
      });
      if (json) {
        out.print(JSON.stringify(made));
        return;
      }
      // As for admin keys: the token alone on the last line, for `| tail -n 1`.
      out.print(
        `enrollment token ${made.token_id} for ${user} in ${profile}: ${made.uses} use${made.uses === 1 ? '' : 's'}, until ${made.expires_at}`,
      );
      out.print('this is the only time the token is shown (the portal keeps only a hash):');
      out.print(made.enrollment_token);
    },
  },
  'enrollment-tokens': {
    summary: 'the enrollment tokens and their state',
    args: [],
    flags: ['user'],
    run: async ({ client, flags, json, out }) => {
      const tokens = await client.enrollmentTokens(flags.user);
      if (json) {
        out.print(JSON.stringify({ enrollment_tokens: tokens }));
        return;
      }
      out.print(
        formatTable(
          ['TOKEN_ID', 'USER', 'PROFILE', 'STATE', 'USES_LEFT', 'EXPIRES', 'CREATED_BY', 'LAST_USED'],
          tokens.map((token) => [
            token.token_id,
            token.user_id,
            token.profile_id,
            token.state,
            `${token.uses_left}/${token.uses}`,
            token.expires_at,
            token.created_by ?? '',
            token.last_used_at ?? '',
          ]),
        ),
      );
    },
  },
  'revoke-enrollment-token': {
    summary: 'redeeming the token answers 410 from now on',
    args: ['USER', 'TOKEN_ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const [user = '', tokenId = ''] = args;
      await client.revokeEnrollmentToken(user, tokenId);
      out.print(json ? JSON.stringify({ ok: true }) : `revoked enrollment token ${tokenId} of ${user}`);
    },
  },
};
