// One rule for every file that holds a secret the portal reads at start (a private key, a client
// secret): only its owner, the portal's user, may read it. A file group or others may read is
// named at start by the option that points to it: warned of for keys a site may share with a
// group on purpose (a TLS key in Debian's ssl-cert group, say), refused where the option says so.
import { statSync } from 'node:fs';

/** Why `file` is too open for a secret (group or others may read it), or null; throws when it cannot be looked at. */
export function looseSecretFile(file: string): string | null {
  const mode = statSync(file).mode & 0o777;
  return (mode & 0o077) === 0
    ? null
    : `is readable by others (mode ${mode.toString(8).padStart(4, '0')}); chmod 600 it`;
}

/** A start warning for the secret file `file` named by `option`, or null when only its owner may read it. */
export function secretFileWarning(option: string, file: string): string | null {
  const loose = looseSecretFile(file);
  return loose === null ? null : `${option}: ${file} ${loose}`;
}
