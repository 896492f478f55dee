// What the webhooks feature offers the rest of the program; other folders import it only from here.
export * from './delivery.js';
export * from './messages.js';
export { checkWebhookKeyAtStart, endOfWebhookSecret, MissingWebhookKey } from './secrets.js';
export * from './subscriptions.js';
