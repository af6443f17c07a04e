// Waiting for something another party does (a request to arrive, a job to start), with a bound
// and a failure that says what never happened, instead of a fixed sleep or an endless loop.

/** Resolves once `condition()` holds (it may ask something itself); fails after `withinMs` naming `what` was awaited. */
export async function waitUntil(what: string, condition: () => boolean | Promise<boolean>, withinMs = 10_000, everyMs = 5): Promise<void> {
  const until = performance.now() + withinMs;
  while (!(await condition())) {
    if (performance.now() > until) throw new Error(`waited ${withinMs} ms for ${what}; it did not happen`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
