// What the configuration loader says about a document it refuses: the tests of the options
// compare these messages, which name the file and the option.
import assert from 'node:assert/strict';
import { ConfigError, resolvePortalConfig } from '../../src/config/load.js';

/** The ConfigError message for a document (as if read from `portal.json`), failing the test when it is accepted. */
export function problemsOf(document: unknown): string {
  try {
    resolvePortalConfig(document, 'portal.json');
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error.message;
  }
  assert.fail('the configuration was accepted');
}
