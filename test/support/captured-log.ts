// A pino logger whose lines a test can read back as objects: to check what the portal logged,
// at which level and with which fields.
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

export type CapturedLine = Record<string, unknown> & { readonly level: number; readonly msg?: string };

export interface CapturedLog {
  readonly logger: Logger;
  lines(): CapturedLine[];
  /** Everything logged, as written. */
  text(): string;
}

export function capturedLog(level = 'info'): CapturedLog {
  const written: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written.push(chunk.toString('utf8'));
      done();
    },
  });
  return {
    logger: pino({ level }, sink),
    lines: () =>
      written
        .join('')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as CapturedLine),
    text: () => written.join(''),
  };
}
