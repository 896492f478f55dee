// Work a test starts and ends by hand, noting when it began: for the order in which places,
// budgets and queues let work in.

/** Work that runs until the test ends it, noting its name in `started` when it begins. */
export function heldWork(started: string[], name: string) {
  let finish = (): void => {};
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  return {
    work: async () => {
      started.push(name);
      await done;
    },
    finish,
  };
}

/** Lets every promise settled so far run its continuations. */
export const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
