// One rule for every file that holds a secret the portal reads at start (a private key, a client
// secret): only its owner, the portal's user, may read it. A file group or others may read is
// named at start by the option that points to it: warned of for keys a site may share with a
// group on purpose (a TLS key in Debian's ssl-cert group, say), refused where the option says so.
import { readFileSync, statSync } from 'node:fs';
import { Secret } from '../shared/secret.js';

/** Why `file` is too open for a secret (group or others may read it), or null; throws when it cannot be looked at. */
export function looseSecretFile(file: string): string | null {
  const mode = statSync(file).mode & 0o777;
  return (mode & 0o077) === 0
    ? null
    : `is readable by others (mode ${mode.toString(8).padStart(4, '0')}); chmod 600 it`;
}

/**
 * The secret in `file` (named `given` in the configuration, by `option`), never quoted: a file
 * others may read, an empty one or one that cannot be read is reported, and gives an empty
 * secret (the start fails on the report). A final newline is not part of the secret.
 */
export function readSecretFile(
  file: string,
  given: string,
  option: string,
  report: (option: string, message: string) => void,
): Secret {
  try {
    const loose = looseSecretFile(file);
    if (loose !== null) {
      report(option, `${given} ${loose}`);
      return new Secret('');
    }
    const secret = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    if (secret === '') report(option, `${given} is empty`);
    return new Secret(secret);
  } catch (error) {
    report(option, `cannot read ${given} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    return new Secret('');
  }
}

/** A start warning for the secret file `file` named by `option`, or null when only its owner may read it. */
export function secretFileWarning(option: string, file: string): string | null {
  const loose = looseSecretFile(file);
  return loose === null ? null : `${option}: ${file} ${loose}`;
}
