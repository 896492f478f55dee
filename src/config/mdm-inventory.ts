// `mdmInventory`: where the portal asks an MDM (Intune, Jamf, or a JSON list) which devices it
// still manages, checked while the configuration loads so a missing option or unreadable client
// secret refuses the start naming the option rather than failing at the first pass.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { messageOf } from '../shared/error-message.js';
import { Secret } from '../shared/secret.js';
import { boundedMilliseconds, parseRetireLimit, type Report, type WarnOfSecretFile } from './option-checks.js';
import type { MdmComplianceConfig, MdmInventoryConfig, MdmInventorySource } from './portal-config.js';
import type { ParsedPortalConfig } from './schema.js';

/** The MDM is asked at least daily, and not more than once a second. */
const MDM_INTERVAL_BOUNDS = { minMs: 1_000, maxMs: 86_400_000, text: 'between PT1S and P1D' } as const;

/**
 * `mdmInventory`: each provider's options present, the client secret read now (a start without
 * it is refused naming the option) and never printed; a secret file others may read is warned of (secret-files.ts).
 */
export function resolveMdmInventory(
  raw: ParsedPortalConfig,
  baseDir: string,
  report: Report,
  warnOfSecretFile: WarnOfSecretFile,
): MdmInventoryConfig | null {
  const inventory = raw.mdmInventory;
  if (inventory === null) return null;
  const need = <T>(value: T | undefined, name: string): T | undefined => {
    if (value === undefined) report(`mdmInventory.${name}`, `is required with provider "${inventory.provider}"`);
    return value;
  };
  const secret = (): Secret => {
    const file = need(inventory.clientSecretFile, 'clientSecretFile');
    if (file === undefined) return new Secret('');
    const resolved = path.resolve(baseDir, file);
    try {
      const text = readFileSync(resolved, 'utf8').trim();
      if (text === '') report('mdmInventory.clientSecretFile', `${resolved} is empty`);
      warnOfSecretFile('mdmInventory.clientSecretFile', resolved);
      return new Secret(text);
    } catch (error) {
      report(
        'mdmInventory.clientSecretFile',
        `cannot read ${resolved} (${(error as NodeJS.ErrnoException).code ?? messageOf(error)})`,
      );
      return new Secret('');
    }
  };
  let source: MdmInventorySource;
  switch (inventory.provider) {
    case 'intune': {
      const tenantId = need(inventory.tenantId, 'tenantId') ?? '';
      source = {
        provider: 'intune',
        clientId: need(inventory.clientId, 'clientId') ?? '',
        clientSecret: secret(),
        tokenUrl:
          inventory.tokenUrl ?? `https://login.microsoftonline.com/${encodeURIComponent(tenantId)}/oauth2/v2.0/token`,
        graphUrl: (inventory.graphUrl ?? 'https://graph.microsoft.com/v1.0').replace(/\/+$/, ''),
      };
      break;
    }
    case 'jamf':
      source = {
        provider: 'jamf',
        url: (need(inventory.url, 'url') ?? '').replace(/\/+$/, ''),
        clientId: need(inventory.clientId, 'clientId') ?? '',
        clientSecret: secret(),
      };
      break;
    case 'json':
      source = {
        provider: 'json',
        url: need(inventory.url, 'url') ?? '',
        headers: Object.fromEntries(
          Object.entries(inventory.headers ?? {}).map(([name, value]) => [name, new Secret(value)]),
        ),
      };
      break;
  }
  return {
    source,
    matches: inventory.matches ?? raw.enrollment.clientCertificate?.deviceId.matches ?? 'serial',
    intervalMs: boundedMilliseconds(inventory.interval, 'mdmInventory.interval', MDM_INTERVAL_BOUNDS, report),
    maxRetirePerPass: parseRetireLimit(inventory.maxRetirePerPass, 'mdmInventory.maxRetirePerPass', report),
    compliance: resolveCompliance(inventory, report),
  };
}

/** A device is stale after a day at the least, and ten years at the most. */
const STALE_AFTER_BOUNDS = { minMs: 86_400_000, maxMs: 3650 * 86_400_000, text: 'between P1D and P3650D' } as const;

/**
 * `mdmInventory.compliance`: only for the providers whose inventory carries it (Intune, a JSON
 * list; Jamf Pro's inventory has no compliance), and each option only where it can act: a JSON
 * list says neither an undetermined state nor a check-in time.
 */
function resolveCompliance(
  inventory: NonNullable<ParsedPortalConfig['mdmInventory']>,
  report: Report,
): MdmComplianceConfig | null {
  const compliance = inventory.compliance;
  if (compliance === null) return null;
  if (inventory.provider === 'jamf')
    report(
      'mdmInventory.compliance',
      'is read from provider "intune" or "json"; Jamf Pro\'s inventory carries no compliance',
    );
  if (inventory.provider === 'json') {
    if (compliance.undetermined !== 'keep')
      report(
        'mdmInventory.compliance.undetermined',
        'is for provider "intune": a JSON entry\'s "compliant" is true or false',
      );
    if (compliance.staleAfter !== null)
      report('mdmInventory.compliance.staleAfter', 'is for provider "intune": a JSON list has no check-in times');
  }
  return {
    undetermined: compliance.undetermined,
    staleAfterMs:
      compliance.staleAfter === null
        ? null
        : boundedMilliseconds(compliance.staleAfter, 'mdmInventory.compliance.staleAfter', STALE_AFTER_BOUNDS, report),
    maxSuspendPerPass: parseRetireLimit(
      compliance.maxSuspendPerPass,
      'mdmInventory.compliance.maxSuspendPerPass',
      report,
    ),
  };
}
