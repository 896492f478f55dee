// The one error a configuration that cannot be used throws, so the CLI can tell it from a bug
// and print its message (every line names the file and the option) instead of a stack trace.
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}
