// Reads the node secret file the portal generated for this node (the agent's only secret), and
// refuses one that others may read.
import { readFile, stat } from 'node:fs/promises';
import { Secret } from '../shared/secret.js';

// Same rule as the portal applies to DATA/keys/node.<N>.key: 32 bytes as lowercase hex.
const NODE_KEY_PATTERN = /^[a-f0-9]{64}$/;

export class NodeKeyError extends Error {
  constructor(file: string, reason: string) {
    super(`node key file ${file}: ${reason}`);
    this.name = 'NodeKeyError';
  }
}

export interface NodeKey {
  readonly key: Secret;
  /** Set when group or others may read the file, which a secret should not allow. */
  readonly permissionWarning: string | null;
}

/** Reads the node secret; trailing whitespace is ignored, the content never appears in errors. */
export async function readNodeKey(file: string): Promise<NodeKey> {
  let text: string;
  let mode: number;
  try {
    [text, mode] = await Promise.all([readFile(file, 'utf8'), stat(file).then((info) => info.mode)]);
  } catch (error) {
    throw new NodeKeyError(file, `cannot read it (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  const key = text.trim();
  if (!NODE_KEY_PATTERN.test(key)) throw new NodeKeyError(file, 'must contain 64 lowercase hexadecimal characters');
  const looseBits = mode & 0o077;
  return {
    key: new Secret(key),
    permissionWarning:
      looseBits === 0 ? null : `node key file ${file} has mode ${(mode & 0o777).toString(8)}; chmod 600 is recommended`,
  };
}
