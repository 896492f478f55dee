// The `platform` parameter and field on the wire: the values of src/shared/platforms.ts (the one
// list) as a zod enum, for the Admin API's schemas and the webhook payloads.
import { z } from 'zod';
import { PLATFORMS } from '../shared/platforms.js';

export const platformSchema = z.enum(PLATFORMS);
