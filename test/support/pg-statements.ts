// What a piece of work sent to PostgreSQL, statement by statement (BEGIN and COMMIT included),
// counted at pg's own client: each is one round trip. Only statements sent from the work's own
// async calls are counted, not those of the portal's background loops meanwhile. With their
// parameters too, for a test that asks the server how it ran them.
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';

/** One statement as sent: its text and its parameters (none for a simple query). */
export interface SentStatement {
  readonly text: string;
  readonly values: readonly unknown[];
}

const counting = new AsyncLocalStorage<SentStatement[]>();
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
  const [config, second] = args;
  const asConfig = config as { text?: string; values?: unknown[] } | undefined;
  const text = typeof config === 'string' ? config : asConfig?.text;
  const values = Array.isArray(second) ? second : typeof config === 'string' ? [] : (asConfig?.values ?? []);
  counting.getStore()?.push({ text: text ?? '', values });
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

/** The statements `work` sent to PostgreSQL, in order, with what it answered. */
export async function statementsSentBy<T>(work: () => Promise<T>): Promise<{ statements: string[]; result: T }> {
  const { sent, result } = await statementsWithValuesSentBy(work);
  return { statements: sent.map((statement) => statement.text), result };
}

/** As statementsSentBy, each statement with its parameters. */
export async function statementsWithValuesSentBy<T>(
  work: () => Promise<T>,
): Promise<{ sent: SentStatement[]; result: T }> {
  const sent: SentStatement[] = [];
  const result = await counting.run(sent, work);
  return { sent, result };
}
