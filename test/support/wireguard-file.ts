// Reads a wg-quick client file back into its sections, for assertions on what `create` returned.

export interface WireGuardFile {
  readonly interface: ReadonlyMap<string, string>;
  readonly peer: ReadonlyMap<string, string>;
  /** Section names in file order. */
  readonly sections: readonly string[];
}

export function parseWireGuardFile(text: string): WireGuardFile {
  const sections: string[] = [];
  const values = new Map<string, Map<string, string>>();
  let current: Map<string, string> | null = null;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header !== null) {
      const name = header[1] ?? '';
      sections.push(name);
      current = new Map();
      values.set(name, current);
      continue;
    }
    const entry = /^(\w+) = (.+)$/.exec(line);
    if (entry === null || current === null)
      throw new Error(`unexpected line in WireGuard file: ${JSON.stringify(line)}`);
    current.set(entry[1] ?? '', entry[2] ?? '');
  }
  return { sections, interface: values.get('Interface') ?? new Map(), peer: values.get('Peer') ?? new Map() };
}
