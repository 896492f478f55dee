// What every `vpn-portal admin` command module shares: the shape of a command and its call, the
// flags it may read, and the checks of flag values that more than one group of commands makes.
import type { AdminApiClient } from '../../admin-client/admin-api-client.js';

export interface Output {
  readonly print: (text: string) => void;
  readonly printError: (text: string) => void;
}

export interface Invocation {
  readonly client: AdminApiClient;
  readonly args: readonly string[];
  readonly flags: AdminFlags;
  readonly json: boolean;
  readonly out: Output;
}

export interface AdminFlags {
  readonly all: boolean;
  readonly format: string | undefined;
  readonly displayName: string | undefined;
  readonly expiresIn: string | undefined;
  readonly preferTcp: boolean;
  readonly output: string | undefined;
  /** `-o FILE` may replace an existing file. */
  readonly force: boolean;
  readonly qr: boolean;
  readonly user: string | undefined;
  readonly profile: string | undefined;
  readonly since: string | undefined;
  /** A moment (ISO 8601): who-had. */
  readonly at: string | undefined;
  readonly until: string | undefined;
  readonly limit: string | undefined;
  readonly cursor: string | undefined;
  readonly open: boolean;
  readonly closed: boolean;
  readonly keyName: string | undefined;
  /** `read`, `write` or `admin`: admin-key create. */
  readonly scope: string | undefined;
  /** Comma-separated CIDR prefixes: admin-key create. */
  readonly allow: string | undefined;
  readonly publicKey: string | undefined;
  /** A file holding a PEM certificate request. */
  readonly csr: string | undefined;
  readonly description: string | undefined;
  readonly overlap: string | undefined;
  readonly webhook: string | undefined;
  readonly eventType: string | undefined;
  readonly state: string | undefined;
  readonly uses: string | undefined;
  readonly validFor: string | undefined;
  /** Wait until the revocation receipt is applied (or overdue) and print it. */
  readonly wait: boolean;
  readonly platform: string | undefined;
  /** `yes` or `no`. */
  readonly onDemand: string | undefined;
  /** A registered device, by the portal's id (`dev_…`): create. */
  readonly deviceId: string | undefined;
  readonly serial: string | undefined;
  readonly mdmId: string | undefined;
  /** A source port: attribution. */
  readonly port: string | undefined;
  /** Why a person is looked up (attribution, who-had), records are held (legal-hold create) or a device is suspended (device suspend). */
  readonly reason: string | undefined;
}

export interface AdminCommand {
  /** What the command does, for its usage. */
  readonly summary: string;
  /** Positional arguments, by name, for the usage message. */
  readonly args: readonly string[];
  /** Flags beyond the common ones that the command accepts. */
  readonly flags: readonly (keyof AdminFlags)[];
  run(call: Invocation): Promise<void>;
}

/**

/**
 * A mistake on the command line; `command` names the admin command whose usage follows it,
 * `usage` is another text to follow it instead.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly command?: string,
    readonly usage?: string,
  ) {
    super(message);
  }
}

/** A `--state` flag, checked against the states the call's parameter takes (src/protocol/admin-api-params.ts). */
export function stateFlag<T extends string>(states: readonly T[], state: string | undefined): T | undefined {
  if (state === undefined) return undefined;
  if (!(states as readonly string[]).includes(state))
    throw new UsageError(`--state must be ${states.join(', ')}, not "${state}"`);
  return state as T;
}

/** `--since`, `--until`, `--limit` (checked: a positive number) and `--cursor` of a paged log, as query fields. */
export function pageFlags(flags: AdminFlags): { since?: string; until?: string; limit?: number; cursor?: string } {
  if (flags.limit !== undefined && !/^[1-9]\d*$/.test(flags.limit))
    throw new UsageError(`--limit: "${flags.limit}" is not a positive number`);
  return {
    ...(flags.since === undefined ? {} : { since: flags.since }),
    ...(flags.until === undefined ? {} : { until: flags.until }),
    ...(flags.limit === undefined ? {} : { limit: Number(flags.limit) }),
    ...(flags.cursor === undefined ? {} : { cursor: flags.cursor }),
  };
}

/** The registered device a configuration is for, named by one of --device-id, --serial or --mdm-id. */
export function deviceFlags(
  flags: AdminFlags,
  command: string,
): { device_id?: string; serial?: string; mdm_id?: string } {
  const named = [flags.deviceId, flags.serial, flags.mdmId].filter((value) => value !== undefined);
  if (named.length > 1)
    throw new UsageError('name the device by one of --device-id, --serial or --mdm-id, not several', command);
  return {
    ...(flags.deviceId === undefined ? {} : { device_id: flags.deviceId }),
    ...(flags.serial === undefined ? {} : { serial: flags.serial }),
    ...(flags.mdmId === undefined ? {} : { mdm_id: flags.mdmId }),
  };
}
