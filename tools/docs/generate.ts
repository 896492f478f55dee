// `npm run docs`: writes the generated docs pages (configuration and Admin API references)
// from the code they describe. Run it after changing a configuration schema or a route.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { GENERATED_PAGES } from './pages.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
for (const page of GENERATED_PAGES) {
  writeFileSync(`${root}${page.path}`, page.render());
  console.log(`wrote ${page.path}`);
}
