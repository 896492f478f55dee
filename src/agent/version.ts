// The agent's version, as `/i/node` reports it.
import { readFile } from 'node:fs/promises';

/** The package version, reported as `v` by `/i/node`; the same relative path works from src/ and dist/. */
export async function readAgentVersion(): Promise<string> {
  try {
    const text = await readFile(new URL('../../package.json', import.meta.url), 'utf8');
    const json: unknown = JSON.parse(text);
    if (typeof json === 'object' && json !== null && 'version' in json && typeof json.version === 'string')
      return json.version;
  } catch {
    // A missing package.json only costs the version string.
  }
  return 'unknown';
}
