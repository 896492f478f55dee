// `vpn-portal generate-secrets [--admin-api] [--node N] [--config FILE]`: creates the keys
// that are missing — a WireGuard key pair and a node secret for every configured node, the
// OpenVPN CA (Ed25519, valid for `caExpiry`), and with --admin-api the Admin API secret, the
// pepper of admin keys' hashes and the key that encrypts answers kept for retries —
// and never overwrites one that exists.
import { ConfigError } from '../config/config-error.js';
import type { PortalConfig } from '../config/portal-config.js';
import { asNodeNumber } from '../shared/ids.js';
import { addDuration } from '../shared/iso-duration.js';
import { KeyStore, type CreatedOrKept } from '../keys/key-store.js';
import { OpenVpnKeys } from '../openvpn/openvpn-keys.js';

export interface GenerateSecretsOptions {
  readonly adminApi: boolean;
  /** Only create the secret of this node (as the reference's `--node N`). */
  readonly node: number | undefined;
}

export async function generateSecrets(
  config: PortalConfig,
  options: GenerateSecretsOptions,
  print: (line: string) => void,
): Promise<void> {
  const keys = new KeyStore(config.keyDir);
  const report = (what: string, result: CreatedOrKept): void =>
    print(result.created ? `created ${what}: ${result.path}` : `kept existing ${what}: ${result.path}`);

  if (options.node !== undefined) {
    // A secret for a node no profile runs on would only ever be copied to the wrong host.
    if (!config.nodes.has(asNodeNumber(options.node))) {
      const known = [...config.nodes.keys()].join(', ');
      throw new ConfigError(
        `generate-secrets --node ${options.node}: no profile of ${config.source} runs on node ${options.node} (configured nodes: ${known})`,
      );
    }
    report(`node ${options.node} secret`, keys.createNodeKey(asNodeNumber(options.node)));
    return;
  }
  for (const node of config.nodes.values()) {
    report(`node ${node.nodeNumber} secret`, keys.createNodeKey(node.nodeNumber));
    report(`node ${node.nodeNumber} WireGuard private key`, keys.createWireGuardKey(node.nodeNumber));
  }
  if (options.adminApi) {
    report('admin API secret', keys.createAdminApiKey());
    report('admin key pepper', keys.createAdminKeyPepper());
    report('retry answer key', keys.createAnswerKey());
    report('webhook secret key', keys.createWebhookKey());
  }
  // As the reference: the CA is made even for WireGuard-only portals, since it also caps every
  // configuration's expiry, and adding an OpenVPN profile later then needs no extra step.
  const now = new Date();
  report('OpenVPN CA', await new OpenVpnKeys(config.keyDir).createCa(now, addDuration(now, config.caExpiry)));
}
