// `vpn-portal admin webhook …`: registering, listing, deleting, rotating and testing webhooks,
// and their deliveries.
import { param } from '../../protocol/admin-api-params.js';
import { formatTable } from '../table.js';
import { type AdminCommand, pageFlags, stateFlag } from './command.js';

export const WEBHOOK_COMMANDS = {
  'webhook create': {
    summary: "subscribe URL to TYPES (comma-separated, or '*'); the signing secret is printed once, on the last line",
    args: ['URL', 'TYPES'],
    flags: ['description'],
    run: async ({ client, args, flags, json, out }) => {
      const [url = '', types = ''] = args;
      const created = await client.createWebhook({
        url,
        event_types: types,
        ...(flags.description === undefined ? {} : { description: flags.description }),
      });
      if (json) {
        out.print(JSON.stringify(created));
        return;
      }
      out.print(
        `created webhook ${created.webhook.webhook_id} for ${created.webhook.event_types.join(',')} to ${created.webhook.url}`,
      );
      out.print('this is the only time the signing secret is shown; store it with the receiver now:');
      out.print(created.secret);
    },
  },
  'webhook list': {
    summary: 'the webhooks (needs a key of scope admin)',
    args: [],
    flags: [],
    run: async ({ client, json, out }) => {
      const webhooks = await client.webhooks();
      out.print(
        json
          ? JSON.stringify({ webhooks })
          : formatTable(
              ['ID', 'URL', 'EVENTS', 'CREATED', 'OLD_SECRET_UNTIL', 'DESCRIPTION'],
              webhooks.map((webhook) => [
                webhook.webhook_id,
                webhook.url,
                webhook.event_types.join(','),
                webhook.created_at,
                webhook.previous_secret_until ?? '',
                webhook.description ?? '',
              ]),
            ),
      );
    },
  },
  'webhook delete': {
    summary: 'stop sending events to the webhook and delete it',
    args: ['ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      await client.deleteWebhook(args[0] ?? '');
      out.print(json ? JSON.stringify({ ok: true }) : `deleted webhook ${args[0] ?? ''}`);
    },
  },
  'webhook rotate': {
    summary: 'a new secret, printed once; the old one signs too for the overlap (default P1D)',
    args: ['ID'],
    flags: ['overlap'],
    run: async ({ client, args, flags, json, out }) => {
      const rotated = await client.rotateWebhookSecret(args[0] ?? '', flags.overlap);
      if (json) {
        out.print(JSON.stringify(rotated));
        return;
      }
      out.print(
        `new secret for webhook ${rotated.webhook_id}; the old one signs too until ${rotated.previous_secret_until}`,
      );
      out.print('this is the only time it is shown:');
      out.print(rotated.secret);
    },
  },
  'webhook test': {
    summary: 'send a test event to the webhook now; exit code 1 when the receiver did not take it',
    args: ['ID'],
    flags: [],
    run: async ({ client, args, json, out }) => {
      const result = await client.testWebhook(args[0] ?? '');
      if (json) out.print(JSON.stringify(result));
      else
        out.print(
          `${result.outcome}${result.status === null ? '' : ` ${result.status}`} in ${result.duration_ms} ms${result.detail === null ? '' : `: ${result.detail}`}`,
        );
      // A receiver that did not take the test event is a failure a script should see.
      if (result.outcome !== 'delivered') throw new TestNotDelivered();
    },
  },
} satisfies Readonly<Record<string, AdminCommand>>;

/** Listed apart: `admin` names it after the device commands. */
export const WEBHOOK_DELIVERY_COMMANDS: Readonly<Record<string, AdminCommand>> = {
  'webhook deliveries': {
    summary: 'the delivery log, newest first, with the last attempt',
    args: [],
    flags: ['webhook', 'eventType', 'state', 'since', 'until', 'limit', 'cursor'],
    run: async ({ client, flags, json, out }) => {
      const paging = pageFlags(flags);
      const state = stateFlag(param.deliveryState.options, flags.state);
      const page = await client.webhookDeliveries({
        ...(flags.webhook === undefined ? {} : { webhook_id: flags.webhook }),
        ...(flags.eventType === undefined ? {} : { event_type: flags.eventType }),
        ...(state === undefined ? {} : { state }),
        ...paging,
      });
      if (json) {
        out.print(JSON.stringify(page));
        return;
      }
      out.print(
        formatTable(
          ['CREATED', 'WEBHOOK', 'EVENT', 'EVENT_ID', 'STATE', 'ATTEMPTS', 'LAST'],
          page.webhook_deliveries.map((delivery) => {
            const last = delivery.attempts[delivery.attempts.length - 1];
            return [
              delivery.created_at,
              delivery.webhook_id,
              delivery.event_type,
              delivery.event_id,
              delivery.state,
              String(delivery.attempts.length),
              last === undefined
                ? ''
                : `${last.outcome}${last.status === null ? '' : ` ${last.status}`}${last.detail === null ? '' : `: ${last.detail}`}`,
            ];
          }),
        ),
      );
      if (page.next_cursor !== null) out.print(`more: --cursor ${page.next_cursor}`);
    },
  },
};

/** `webhook test` reached the portal, but the receiver did not take the event: exit code 1. */
export class TestNotDelivered extends Error {
  override readonly name = 'TestNotDelivered';
}
