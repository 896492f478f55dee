// What a piece of work sent to PostgreSQL, statement by statement (BEGIN and COMMIT included),
// counted at pg's own client: each is one round trip. Only statements sent from the work's own
// async calls are counted, not those of the portal's background loops meanwhile.
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';

const counting = new AsyncLocalStorage<string[]>();
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
  const [config] = args;
  const text = typeof config === 'string' ? config : (config as { text?: string } | undefined)?.text;
  counting.getStore()?.push(text ?? '');
  return (query as (...a: unknown[]) => unknown).apply(this, args);
} as typeof query;

/** The statements `work` sent to PostgreSQL, in order, with what it answered. */
export async function statementsSentBy<T>(work: () => Promise<T>): Promise<{ statements: string[]; result: T }> {
  const statements: string[] = [];
  const result = await counting.run(statements, work);
  return { statements, result };
}
