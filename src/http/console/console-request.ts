// What a console page or change is handed once the guard let its request through, and what it
// answers: a page (title and body inside the frame) or a redirect within the console.
import type { FastifyRequest } from 'fastify';
import type { ActiveConsoleSession } from '../../core/console/index.js';
import type { PortalContext } from '../../core/context.js';
import type { Html } from './html.js';
import type { PageFrame } from './layout.js';

export interface ConsoleRequest {
  readonly ctx: PortalContext;
  readonly request: FastifyRequest;
  readonly frame: PageFrame;
  readonly session: ActiveConsoleSession;
  /** The query string's and the form's text fields. */
  readonly query: Readonly<Record<string, string>>;
}

export type PageResult =
  | { readonly title: string; readonly body: Html; readonly status?: number }
  | { readonly redirect: string };
export type ConsolePage = (request: ConsoleRequest) => Promise<PageResult>;
