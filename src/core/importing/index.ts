// What the importing feature offers the rest of the program (the eduVPN import); other folders import it only from here.
export * from './apply.js';
export * from './plan.js';
export * from './plan-types.js';
