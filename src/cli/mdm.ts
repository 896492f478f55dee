// `vpn-portal mdm sync --dry-run`: what a pass of the MDM inventory sync (mdmInventory) would do
// now — read the inventory, compare the live devices, and with compliance which it would suspend
// and resume — printed, and nothing changed. The pass
// that retires runs in the portal every mdmInventory.interval, where the nodes are reached.
// `vpn-portal mdm confirm-crl [SHA256]`: the revocation lists held because they would retire more
// than enrollment.clientCertificate.crlMaxRetire at once, or the administrator's confirmation
// that one may retire its devices (stored in the database: every portal instance sees it, and
// retires them at its next refresh).
// `vpn-portal mdm forget-crl LOCATION`: forgets which CA a revocation list source's lists name
// and how new the last one was, for a source that really serves another CA's lists now.
import path from 'node:path';
import { ConfigError } from '../config/config-error.js';
import { compareWithMdmInventory, type CompliancePass, type InventoryPass } from '../core/devices/index.js';
import { systemClock } from '../shared/time.js';
import { openDatabase } from '../storage/database.js';
import { confirmRevocationList, revocationListHolds } from '../storage/revocation-list-trust.js';
import { forgetRevocationListSource } from '../storage/revocation-list-sources.js';
import { formatAtom } from '../shared/time.js';
import { loadExistingPortalConfig } from './existing-portal.js';
import { describeUnknownCommand, parseOptions } from './options.js';
import { formatTable } from './table.js';
import { MDM_USAGE } from './usage.js';

/** Runs an `mdm` subcommand; returns the exit code (1: the inventory cannot be read). */
export async function runMdmCommand(
  args: readonly string[],
  print: (line: string) => void,
  printError: (line: string) => void,
): Promise<number> {
  const [subcommand, ...rest] = args;
  const { values, positionals } = parseOptions({
    args: [...rest],
    options: { config: { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } },
    strict: true,
    allowPositionals: subcommand === 'confirm-crl' || subcommand === 'forget-crl',
  });
  if (subcommand === 'confirm-crl') return confirmCrl(positionals, values.config, values.json === true, print);
  if (subcommand === 'forget-crl') return forgetCrl(positionals, values.config, print);
  if (subcommand !== 'sync')
    throw new ConfigError(
      `${describeUnknownCommand('mdm', subcommand ?? '', ['sync', 'confirm-crl', 'forget-crl'])}\n${MDM_USAGE}`,
    );
  if (values['dry-run'] !== true) {
    throw new ConfigError(
      `mdm sync needs --dry-run: the portal itself retires the devices gone, every mdmInventory.interval\n${MDM_USAGE}`,
    );
  }
  const config = loadExistingPortalConfig(values.config);
  if (config.mdmInventory === null) throw new ConfigError('mdm sync: the configuration has no mdmInventory');
  const inventory = config.mdmInventory;
  const db = await openDatabase(config.database, { timeoutMs: config.databaseTimeoutMs });
  let pass: InventoryPass;
  try {
    pass = await compareWithMdmInventory({ db, clock: systemClock }, inventory);
  } finally {
    await db.destroy();
  }
  if (values.json === true) {
    print(JSON.stringify(pass, null, 2));
    return pass.outcome === 'unreadable' ? 1 : 0;
  }
  if (pass.outcome === 'unreadable') {
    printError(
      `the ${inventory.source.provider} inventory cannot be read: ${pass.reason}; a pass would retire nothing`,
    );
    return 1;
  }
  print(
    `${inventory.source.provider} inventory: ${pass.inventorySize} devices; ${pass.compared} live devices compared by ${inventory.matches}`,
  );
  printRetirements(pass, print);
  if (pass.compliance !== null) printCompliance(pass.compliance, pass.outcome === 'too-many', print);
  return 0;
}

function printRetirements(pass: Extract<InventoryPass, { gone: unknown }>, print: (line: string) => void): void {
  const table = (devices: typeof pass.gone) =>
    formatTable(
      ['device_id', 'user_id', 'serial', 'mdm_id', 'first missed'],
      devices.map((device) => [
        device.deviceId,
        device.userId,
        device.serial ?? '-',
        device.mdmId ?? '-',
        device.firstMissedAt,
      ]),
    );
  if (pass.gone.length === 0 && pass.missed.length === 0) {
    print('a pass would retire nothing: every device compared is in the inventory');
    return;
  }
  if (pass.gone.length === 0) print('a pass would retire nothing now');
  else {
    print(
      pass.outcome === 'too-many'
        ? `a pass would retire nothing: ${pass.gone.length} devices are gone, more than mdmInventory.maxRetirePerPass allows (${pass.limit})`
        : `a pass would retire ${pass.gone.length}, missed by the pass before too (at most ${pass.limit} a pass):`,
    );
    print(table(pass.gone));
  }
  if (pass.missed.length > 0) {
    print(
      `${pass.missed.length} missed for the first time: a pass notes them, and the pass after retires those it misses again:`,
    );
    print(table(pass.missed));
  }
}

/** The suspensions and resumes of compliance (none at all while too many are gone: the pass does nothing then). */
function printCompliance(plan: CompliancePass, nothingDone: boolean, print: (line: string) => void): void {
  const table = (changes: CompliancePass['suspend']) =>
    formatTable(
      ['device_id', 'user_id', 'serial', 'mdm_id', 'reason', 'mdm says'],
      changes.map((change) => [
        change.deviceId,
        change.userId,
        change.serial ?? '-',
        change.mdmId ?? '-',
        change.reason,
        change.why,
      ]),
    );
  if (plan.suspend.length === 0) print('a pass would suspend nothing for compliance');
  else {
    print(
      nothingDone
        ? `a pass would suspend nothing: ${plan.suspend.length} devices are out of compliance, but too many are gone`
        : plan.held
          ? `a pass would suspend nothing: ${plan.suspend.length} devices are out of compliance, more than mdmInventory.compliance.maxSuspendPerPass allows (${plan.suspendLimit})`
          : `a pass would suspend ${plan.suspend.length} (at most ${plan.suspendLimit} a pass${alreadyNote(plan)}):`,
    );
    print(table(plan.suspend));
  }
  if (plan.resume.length === 0) print('a pass would resume nothing');
  else {
    print(
      nothingDone
        ? `a pass would resume nothing: ${plan.resume.length} devices are compliant again, but too many are gone`
        : `a pass would resume ${plan.resume.length}, compliant again:`,
    );
    print(table(plan.resume));
  }
}

/** Of the devices to suspend, those suspended already for another reason (not counted against the limit). */
function alreadyNote(plan: CompliancePass): string {
  const already = plan.suspend.filter((change) => change.suspendedAlready).length;
  return already === 0
    ? ''
    : `; ${already} of them suspended already for another reason, not counted: they stay suspended for this one too`;
}

/** Without a SHA-256: the held lists; with one: confirms that list. */
async function confirmCrl(
  positionals: readonly string[],
  configPath: string | undefined,
  json: boolean,
  print: (line: string) => void,
): Promise<number> {
  if (positionals.length > 1) throw new ConfigError(`mdm confirm-crl takes at most one SHA-256\n${MDM_USAGE}`);
  const [sha256] = positionals;
  if (sha256 !== undefined && !/^[0-9a-f]{64}$/.test(sha256))
    throw new ConfigError(`mdm confirm-crl: "${sha256}" is not a SHA-256 (64 lower-case hex digits)\n${MDM_USAGE}`);
  const config = loadExistingPortalConfig(configPath);
  const db = await openDatabase(config.database, { timeoutMs: config.databaseTimeoutMs });
  try {
    if (sha256 === undefined) {
      const held = await revocationListHolds(db, { confirmed: false });
      if (json) print(JSON.stringify(held, null, 2));
      else if (held.length === 0) print('no revocation list is held');
      else
        print(
          formatTable(
            ['sha256', 'issuer', 'devices', 'held_at', 'crl'],
            held.map((hold) => [hold.sha256, hold.issuer, String(hold.devices), hold.heldAt, hold.location]),
          ),
        );
      return 0;
    }
    if (!(await confirmRevocationList(db, sha256, formatAtom(new Date())))) {
      throw new ConfigError(
        `mdm confirm-crl: no revocation list ${sha256} is held (vpn-portal mdm confirm-crl lists them)`,
      );
    }
  } finally {
    await db.destroy();
  }
  print(`revocation list ${sha256} confirmed: the portal retires its devices at the next refresh`);
  return 0;
}

/** Forgets what was believed from one revocation list source, named as `crl` names it. */
async function forgetCrl(
  positionals: readonly string[],
  configPath: string | undefined,
  print: (line: string) => void,
): Promise<number> {
  const [location, ...more] = positionals;
  if (location === undefined || more.length > 0)
    throw new ConfigError(`mdm forget-crl takes one revocation list source (a URL or file of crl)\n${MDM_USAGE}`);
  const config = loadExistingPortalConfig(configPath);
  const sources = config.enrollment.clientCertificate?.crlSources.map((source) => source.location) ?? [];
  // A file is named as configured or as resolved; the portal keeps it resolved.
  const known = sources.find((source) => source === location || source === path.resolve(location));
  if (known === undefined)
    throw new ConfigError(
      `mdm forget-crl: "${location}" is not a source of enrollment.clientCertificate.crl (${sources.length === 0 ? 'it has none' : sources.join(', ')})`,
    );
  const db = await openDatabase(config.database, { timeoutMs: config.databaseTimeoutMs });
  let forgotten: boolean;
  try {
    forgotten = await forgetRevocationListSource(db, known);
  } finally {
    await db.destroy();
  }
  print(
    forgotten
      ? `${known}: forgotten; a portal that starts now believes the first good list it reads from there, of whichever known CA`
      : `${known}: nothing was believed from there yet`,
  );
  return 0;
}
