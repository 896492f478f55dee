// A clock that runs with real time, moved forward by the test: for what is due hours or days
// later (expiry, housekeeping) while timers, sockets and the database run as usual.
import type { Clock } from '../../src/shared/time.js';

export interface ShiftedClock extends Clock {
  advance(ms: number): void;
}

export function shiftedClock(): ShiftedClock {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance(ms) {
      offset += ms;
    },
  };
}
