// The configuration of a command that works on a portal's existing database (admin-key,
// node-reset, db migrate|status). Without --config the embedded default names ./data; opening
// it there when it holds no database would make a new, empty one, and the key printed from it
// would be refused by the real portal with a bare 401. So such a command refuses instead.
import { existsSync } from 'node:fs';
import { embeddedDefaultConfig } from '../config/defaults.js';
import { ConfigError, loadPortalConfig } from '../config/load.js';
import type { PortalConfig } from '../config/portal-config.js';

export function loadExistingPortalConfig(configPath: string | undefined): PortalConfig {
  const config = loadPortalConfig(configPath);
  if (configPath === undefined && config.database.dialect === 'sqlite' && !existsSync(config.database.path)) {
    throw new ConfigError(`no portal database in ${embeddedDefaultConfig.dataDir} (pass --config FILE)`);
  }
  return config;
}
