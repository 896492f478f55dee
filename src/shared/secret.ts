// A secret that prints as [redacted]: keys never reach a log line or an error message by accident.
import { inspect } from 'node:util';

const REDACTED = '[redacted]';

/**
 * Holds a secret (node key, WireGuard private key) so that it cannot end up in a log line,
 * an error message or JSON by accident: only `reveal()` gives the value.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}
