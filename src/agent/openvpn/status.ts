// Reading the answer to the management command `status 3` (tab-separated, like
// `--status-version 3`): the connected clients, found by the column names of the
// `HEADER\tCLIENT_LIST\t…` line rather than by position, which changed between versions.

/** One `CLIENT_LIST` row. */
export interface OpenVpnStatusClient {
  readonly commonName: string;
  /** OpenVPN's client id, for `client-kill`. */
  readonly cid: number;
  /** Null until OpenVPN assigned one. */
  readonly ipFour: string | null;
  readonly ipSix: string | null;
  readonly bytesReceived: number;
  readonly bytesSent: number;
}

const COLUMNS = {
  commonName: 'Common Name',
  ipFour: 'Virtual Address',
  ipSix: 'Virtual IPv6 Address',
  cid: 'Client ID',
  bytesReceived: 'Bytes Received',
  bytesSent: 'Bytes Sent',
} as const;

export class StatusFormatError extends Error {
  constructor(reason: string) {
    super(`unexpected OpenVPN status output: ${reason}`);
    this.name = 'StatusFormatError';
  }
}

/** The clients of a `status 3` answer (its lines without the final `END`). */
export function parseStatusClients(lines: readonly string[]): OpenVpnStatusClient[] {
  const header = lines.find((line) => line.startsWith('HEADER\tCLIENT_LIST\t'));
  if (header === undefined) throw new StatusFormatError('no HEADER line for CLIENT_LIST');
  // Column positions in a CLIENT_LIST row: the header names them after "HEADER".
  const names = header.split('\t').slice(1);
  const position = (name: string): number => {
    const index = names.indexOf(name);
    if (index === -1) throw new StatusFormatError(`no "${name}" column`);
    return index;
  };
  const at = {
    commonName: position(COLUMNS.commonName),
    ipFour: position(COLUMNS.ipFour),
    ipSix: position(COLUMNS.ipSix),
    cid: position(COLUMNS.cid),
    bytesReceived: position(COLUMNS.bytesReceived),
    bytesSent: position(COLUMNS.bytesSent),
  };

  const clients: OpenVpnStatusClient[] = [];
  for (const line of lines) {
    if (!line.startsWith('CLIENT_LIST\t')) continue;
    const fields = line.split('\t');
    const cid = Number(fields[at.cid]);
    if (!Number.isSafeInteger(cid) || cid < 0) throw new StatusFormatError('a CLIENT_LIST row without a client id');
    clients.push({
      commonName: fields[at.commonName] ?? '',
      cid,
      ipFour: nonEmpty(fields[at.ipFour]),
      ipSix: nonEmpty(fields[at.ipSix]),
      bytesReceived: counter(fields[at.bytesReceived]),
      bytesSent: counter(fields[at.bytesSent]),
    });
  }
  return clients;
}

function nonEmpty(field: string | undefined): string | null {
  return field === undefined || field === '' ? null : field;
}

function counter(field: string | undefined): number {
  const value = Number(field);
  return Number.isSafeInteger(value) && value >= 0 ? value : 0;
}
