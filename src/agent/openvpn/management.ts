// A client of one OpenVPN management socket (`management PATH unix`): a persistent connection
// that reconnects while the socket is away, commands answered one at a time in order, and the
// real-time `>CLIENT:` notifications with their `>CLIENT:ENV,…` blocks (OpenVPN's
// doc/management-notes.txt). OpenVPN serves one management client at a time; this is it.
import { createConnection, type Socket } from 'node:net';
import type { Logger } from 'pino';

/** A `>CLIENT:CONNECT|REAUTH|ESTABLISHED|DISCONNECT|CR_RESPONSE` notification with its environment. */
export interface ClientNotification {
  readonly kind: 'CONNECT' | 'REAUTH' | 'ESTABLISHED' | 'DISCONNECT' | 'CR_RESPONSE';
  /** OpenVPN's client id. */
  readonly cid: number;
  /** Key id: only CONNECT, REAUTH and CR_RESPONSE carry one. */
  readonly kid: number | null;
  /** The client's variables (common_name, X509_0_OU, …). May hold a client-supplied password: never log it. */
  readonly env: ReadonlyMap<string, string>;
}

export interface ManagementHandlers {
  /** The socket accepted the connection: commands may be sent. */
  onConnected(): void;
  /** The connection ended (the process exited or closed it); reconnecting follows. */
  onDisconnected(): void;
  onClient(notification: ClientNotification): void;
}

export interface ManagementConnectionOptions {
  readonly socketPath: string;
  readonly logger: Logger;
  readonly handlers: ManagementHandlers;
  readonly commandTimeoutMs?: number;
}

/** No management connection right now (the process is starting, restarting or gone). */
export class ManagementUnavailableError extends Error {
  constructor(socketPath: string) {
    super(`no connection to the OpenVPN management socket ${socketPath}`);
    this.name = 'ManagementUnavailableError';
  }
}

/** OpenVPN answered `ERROR: …`. */
export class ManagementCommandError extends Error {
  constructor(
    readonly command: string,
    readonly answer: string,
  ) {
    super(`OpenVPN refused "${command}": ${answer}`);
    this.name = 'ManagementCommandError';
  }
}

const DEFAULT_COMMAND_TIMEOUT_MS = 10_000;
const RECONNECT_DELAYS_MS = [50, 100, 200, 500, 1000];
/** Notification kinds followed by `>CLIENT:ENV,…` lines up to `>CLIENT:ENV,END`. */
const CLIENT_KINDS_WITH_ENV: readonly string[] = [
  'CONNECT',
  'REAUTH',
  'ESTABLISHED',
  'DISCONNECT',
  'CR_RESPONSE',
] satisfies ClientNotification['kind'][];
const UNSIGNED = /^(0|[1-9][0-9]{0,9})$/;

interface PendingCommand {
  readonly line: string;
  /** Multi-line answers end with `END`; the others are one `SUCCESS:`/`ERROR:` line. */
  readonly multiLine: boolean;
  readonly resolve: (lines: string[]) => void;
  readonly reject: (error: Error) => void;
  readonly text: string;
}

interface ClientBlock {
  readonly kind: ClientNotification['kind'];
  readonly cid: number;
  readonly kid: number | null;
  readonly env: Map<string, string>;
}

export class ManagementConnection {
  readonly #options: ManagementConnectionOptions;
  #socket: Socket | null = null;
  #connected = false;
  #closed = false;
  #reconnectAttempt = 0;
  #reconnectTimer: NodeJS.Timeout | null = null;
  #buffer = '';
  #block: ClientBlock | null = null;
  #queue: PendingCommand[] = [];
  /** The command whose answer is being read; it was written to the socket. */
  #current: { readonly command: PendingCommand; readonly lines: string[]; readonly timer: NodeJS.Timeout } | null =
    null;

  constructor(options: ManagementConnectionOptions) {
    this.#options = options;
  }

  get connected(): boolean {
    return this.#connected;
  }

  /** Starts connecting; keeps trying (50 ms … 1 s apart) until close(). */
  start(): void {
    if (this.#socket === null && this.#reconnectTimer === null && !this.#closed) this.#connect();
  }

  /** Ends the connection for good; pending commands fail. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#reconnectTimer !== null) clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = null;
    const socket = this.#socket;
    if (socket !== null && !socket.destroyed) {
      const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
      socket.destroy();
      await closed;
    }
    this.#failAll(new ManagementUnavailableError(this.#options.socketPath));
  }

  /** A command answered with one `SUCCESS: …` line (its text is returned) or `ERROR: …` (thrown). */
  async command(line: string): Promise<string> {
    const [answer = ''] = await this.#enqueue([line], false);
    return answer;
  }

  /**
   * A command followed by a text block and `END` (`client-auth CID KID` and its
   * client-connect directives), answered with one line like command().
   */
  async commandWithBlock(line: string, block: readonly string[]): Promise<string> {
    const [answer = ''] = await this.#enqueue([line, ...block, 'END'], false);
    return answer;
  }

  /** A command answered with lines up to `END` (`status 3`); `ERROR: …` is thrown. */
  query(line: string): Promise<string[]> {
    return this.#enqueue([line], true);
  }

  #enqueue(lines: readonly string[], multiLine: boolean): Promise<string[]> {
    for (const line of lines) {
      // One command per line: a line break inside a value would start another command.
      if (/[\r\n\0]/.test(line))
        return Promise.reject(new Error('a management command line must not contain line breaks'));
    }
    if (!this.#connected) return Promise.reject(new ManagementUnavailableError(this.#options.socketPath));
    return new Promise((resolve, reject) => {
      this.#queue.push({
        line: lines[0] ?? '',
        multiLine,
        resolve,
        reject,
        text: lines.map((line) => `${line}\n`).join(''),
      });
      this.#writeNext();
    });
  }

  #writeNext(): void {
    if (this.#current !== null || !this.#connected || this.#socket === null) return;
    const command = this.#queue.shift();
    if (command === undefined) return;
    const timer = setTimeout(() => {
      // The answer can no longer be matched to its command: start over with a new connection.
      this.#options.logger.warn(
        { socket: this.#options.socketPath, command: verbOf(command.line) },
        'OpenVPN did not answer a management command in time; reconnecting',
      );
      this.#socket?.destroy();
    }, this.#options.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS);
    this.#current = { command, lines: [], timer };
    this.#socket.write(command.text);
  }

  #connect(): void {
    this.#reconnectTimer = null;
    if (this.#closed) return;
    const socket = createConnection({ path: this.#options.socketPath });
    this.#socket = socket;
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      this.#connected = true;
      this.#reconnectAttempt = 0;
      this.#buffer = '';
      this.#block = null;
      this.#options.logger.debug({ socket: this.#options.socketPath }, 'connected to the OpenVPN management socket');
      this.#options.handlers.onConnected();
      this.#writeNext();
    });
    socket.on('data', (chunk: string) => this.#take(chunk));
    // 'close' follows every error; ENOENT/ECONNREFUSED just mean "not there yet".
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const wasConnected = this.#connected;
      this.#connected = false;
      this.#socket = null;
      this.#failAll(new ManagementUnavailableError(this.#options.socketPath));
      if (wasConnected) {
        this.#options.logger.debug({ socket: this.#options.socketPath }, 'the OpenVPN management connection ended');
        this.#options.handlers.onDisconnected();
      }
      if (this.#closed) return;
      const delay = RECONNECT_DELAYS_MS[Math.min(this.#reconnectAttempt, RECONNECT_DELAYS_MS.length - 1)] ?? 1000;
      this.#reconnectAttempt += 1;
      this.#reconnectTimer = setTimeout(() => this.#connect(), delay);
    });
  }

  #failAll(error: Error): void {
    if (this.#current !== null) {
      clearTimeout(this.#current.timer);
      this.#current.command.reject(error);
      this.#current = null;
    }
    for (const command of this.#queue.splice(0)) command.reject(error);
  }

  #take(chunk: string): void {
    this.#buffer += chunk;
    let newline = this.#buffer.indexOf('\n');
    while (newline !== -1) {
      const line = this.#buffer.slice(0, newline).replace(/\r$/, '');
      this.#buffer = this.#buffer.slice(newline + 1);
      this.#line(line);
      newline = this.#buffer.indexOf('\n');
    }
  }

  #line(line: string): void {
    if (line.startsWith('>')) {
      this.#realTime(line);
      return;
    }
    const current = this.#current;
    if (current === null) {
      this.#options.logger.debug(
        { socket: this.#options.socketPath },
        'unexpected management output without a command',
      );
      return;
    }
    const { command } = current;
    if (!command.multiLine || current.lines.length === 0) {
      if (line.startsWith('ERROR:')) {
        this.#finish(() =>
          command.reject(new ManagementCommandError(verbOf(command.line), line.slice('ERROR:'.length).trim())),
        );
        return;
      }
      if (!command.multiLine) {
        if (line.startsWith('SUCCESS:')) this.#finish(() => command.resolve([line.slice('SUCCESS:'.length).trim()]));
        else
          this.#finish(() =>
            command.reject(
              new ManagementCommandError(verbOf(command.line), `unexpected answer "${line.slice(0, 100)}"`),
            ),
          );
        return;
      }
    }
    if (line === 'END') {
      const lines = current.lines;
      this.#finish(() => command.resolve(lines));
      return;
    }
    current.lines.push(line);
  }

  #finish(settle: () => void): void {
    if (this.#current !== null) clearTimeout(this.#current.timer);
    this.#current = null;
    settle();
    this.#writeNext();
  }

  #realTime(line: string): void {
    const { logger, socketPath } = this.#options;
    if (line.startsWith('>CLIENT:ENV,')) {
      const block = this.#block;
      if (block === null) return;
      const variable = line.slice('>CLIENT:ENV,'.length);
      if (variable === 'END') {
        this.#block = null;
        this.#options.handlers.onClient(block);
        return;
      }
      const equals = variable.indexOf('=');
      if (equals > 0) block.env.set(variable.slice(0, equals), variable.slice(equals + 1));
      return;
    }
    if (line.startsWith('>CLIENT:')) {
      const [kind = '', cidText = '', kidText] = line.slice('>CLIENT:'.length).split(',');
      if (!isClientKind(kind)) return; // ADDRESS: the addresses also come with ESTABLISHED.
      const hasKid = kind === 'CONNECT' || kind === 'REAUTH' || kind === 'CR_RESPONSE';
      if (!UNSIGNED.test(cidText) || (hasKid && !UNSIGNED.test(kidText ?? ''))) {
        logger.warn({ socket: socketPath, notification: kind }, 'malformed OpenVPN client notification ignored');
        return;
      }
      this.#block = { kind, cid: Number(cidText), kid: hasKid ? Number(kidText) : null, env: new Map() };
      return;
    }
    if (line.startsWith('>FATAL:'))
      logger.warn({ socket: socketPath, openvpn: line.slice(1) }, 'OpenVPN reports a fatal error');
    else logger.debug({ socket: socketPath, openvpn: line.slice(1, 200) }, 'OpenVPN management notification');
  }
}

/**
 * A double-quoted management argument (the lexer of OpenVPN's configuration files: backslash
 * escapes backslash and double quote). Line breaks cannot be carried and are refused.
 */
export function quoteArgument(text: string): string {
  if (/[\r\n\0]/.test(text)) throw new Error('a management argument must not contain line breaks');
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function isClientKind(kind: string): kind is ClientNotification['kind'] {
  return CLIENT_KINDS_WITH_ENV.includes(kind);
}

/** The command word only: arguments (addresses, ids) stay out of logs and errors. */
function verbOf(line: string): string {
  return line.split(' ', 1)[0] ?? '';
}
