// A test's undo steps: each thing a test starts registers how to undo it, and when the test ends,
// whatever failed, they run last first, so what was started first (a server, a mounted disk) is
// undone after everything that depends on it.
import type { TestContext } from 'node:test';

/** Registers a step to run when `t` ends; the steps run in the reverse order of their registration. */
export type AtEnd = (step: () => unknown) => void;

export function undoStepsFor(t: TestContext): AtEnd {
  const steps: (() => unknown)[] = [];
  t.after(async () => {
    for (const step of steps.reverse()) await step();
  });
  return (step) => {
    steps.push(step);
  };
}
