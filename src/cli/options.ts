// Reading a command's options, with a mistake told the way a person can act on: "unknown option
// --expire-in (did you mean --expires-in?)" instead of Node's hint about positional arguments;
// a mistyped command the same way ("unknown command "serv" (did you mean serve?)").
// The caller prints the usage after it.
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A mistake in the options of a command line; the message names the option. */
export class OptionError extends Error {
  override readonly name = 'OptionError';
}

export function isParseArgsError(error: unknown): boolean {
  return error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS');
}

/** `parseArgs`, but an unknown option throws an OptionError naming the nearest known one. */
export function parseOptions<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    if (!isParseArgsError(error)) throw error;
    const unknown = unknownOption(config);
    throw new OptionError(
      unknown === null ? (error as Error).message : describeUnknownOption(unknown, Object.keys(config.options ?? {})),
    );
  }
}

/** The first option on the command line that the configuration does not know, as typed (`--expire-in`). */
export function unknownOption(config: ParseArgsConfig): string | null {
  const known = config.options ?? {};
  // Not strict, and positionals allowed: an unknown option's value must not stop the search.
  const { tokens } = parseArgs({ ...config, strict: false, allowPositionals: true, tokens: true });
  const token = tokens.find((candidate) => candidate.kind === 'option' && !Object.hasOwn(known, candidate.name));
  return token?.kind === 'option' ? token.rawName : null;
}

/** "unknown option --expire-in (did you mean --expires-in?)"; `candidates` are long option names without dashes. */
export function describeUnknownOption(rawName: string, candidates: readonly string[]): string {
  const best = nearestName(rawName.replace(/^-+/, ''), candidates);
  return `unknown option ${rawName}${best === null ? '' : ` (did you mean --${best}?)`}`;
}

/**
 * "unknown admin command "user" (did you mean users?)"; `of` names the command whose
 * subcommand it is (`admin`, `db`), or is empty for vpn-portal's own commands.
 */
export function describeUnknownCommand(of: string, typed: string, candidates: readonly string[]): string {
  const best = nearestName(typed, candidates);
  return `unknown ${of === '' ? '' : `${of} `}command "${typed}"${best === null ? '' : ` (did you mean ${best}?)`}`;
}

/** The candidate closest to what was typed, when it is close: two edits, or a third of a long name. */
function nearestName(typed: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = editDistance(typed, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best !== null && typed !== '' && bestDistance <= Math.max(2, Math.floor(best.length / 3)) ? best : null;
}

/** Levenshtein distance: insertions, deletions and substitutions, one each. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
