// The per-profile tls-crypt key (reference §8.2): 2048 random bits in the text format of
// `openvpn --genkey secret`, but without the trailing newline, as the reference writes it.
import { randomBytes } from 'node:crypto';

const KEY_BYTES = 256;
const HEX_PER_LINE = 32;
const BEGIN = '-----BEGIN OpenVPN Static key V1-----';
const END = '-----END OpenVPN Static key V1-----';

/** A fresh key: the three comment lines, the BEGIN line, 16 lines of 32 lowercase hex digits, the END line. */
export function generateTlsCryptKey(): string {
  const hex = randomBytes(KEY_BYTES).toString('hex');
  const lines: string[] = [];
  for (let start = 0; start < hex.length; start += HEX_PER_LINE) lines.push(hex.slice(start, start + HEX_PER_LINE));
  return ['#', '# 2048 bit OpenVPN static key', '#', BEGIN, ...lines, END].join('\n');
}

/**
 * True for a text OpenVPN reads as a 2048-bit static key: optional `#` comment lines, then
 * the framed 16 × 32 hex digits. A trailing newline (as `openvpn --genkey` writes) is fine;
 * anything else around the key is not, because the text is inlined in configuration files.
 */
export function isTlsCryptKey(text: string): boolean {
  const keyLine = `[0-9a-fA-F]{${HEX_PER_LINE}}\\n`;
  const pattern = new RegExp(`^(#[^\\n]*\\n)*${BEGIN}\\n(${keyLine}){${(KEY_BYTES * 2) / HEX_PER_LINE}}${END}\\n?$`);
  return pattern.test(text);
}
