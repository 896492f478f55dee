// The generated docs pages and their writers: `npm run docs` writes them, and
// test/docs/generated-pages.test.ts fails when a committed page differs from what they write.
import { renderAdminApiPage } from './admin-api-page.js';
import { renderConfigurationPage } from './configuration-page.js';

export interface GeneratedPage {
  /** Relative to the repository's root. */
  readonly path: string;
  readonly render: () => string;
}

export const GENERATED_PAGES: readonly GeneratedPage[] = [
  { path: 'docs/configuration.md', render: renderConfigurationPage },
  { path: 'docs/admin-api.md', render: renderAdminApiPage },
];
