// Whether OpenVPN should offer AES-256-GCM before CHACHA20-POLY1305: the portal writes the
// `data-ciphers` order from the node's `prefer_aes`, and AES is only the faster one with
// hardware support.
import { readFile } from 'node:fs/promises';
import type { PreferAesSetting } from '../config.js';

/** True when a /proc/cpuinfo text lists AES instructions (x86 `flags`, ARM `Features`). */
export function cpuInfoHasAes(cpuInfo: string): boolean {
  return /^(?:flags|Features)[ \t]*:(?:.*[ \t])?aes(?:[ \t]|$)/m.test(cpuInfo);
}

/** `yes`/`no` as configured; `auto` asks /proc/cpuinfo (unreadable: no AES assumed). */
export async function resolvePreferAes(setting: PreferAesSetting, cpuInfoFile = '/proc/cpuinfo'): Promise<boolean> {
  if (setting !== 'auto') return setting === 'yes';
  try {
    return cpuInfoHasAes(await readFile(cpuInfoFile, 'utf8'));
  } catch {
    return false;
  }
}
