// The buffer between the provider call (driven by the wrapper) and the consumer (ADK).
// The producer never waits for the consumer, so the provider call ends, and its permit is
// released, even when the consumer stops pulling. A model call yields a handful of
// responses, so the buffer stays small.

type Pending<T> = { resolve(result: IteratorResult<T>): void; reject(error: unknown): void };

export class ResponseChannel<T> {
  readonly #items: T[] = [];
  #closed = false;
  #failed = false;
  #error: unknown;
  #pending: Pending<T> | undefined;

  push(item: T): void {
    if (this.#closed) return;
    if (this.#pending) {
      const pending = this.#pending;
      this.#pending = undefined;
      pending.resolve({ value: item, done: false });
    } else {
      this.#items.push(item);
    }
  }

  /** No more items; the consumer sees the end after the buffered ones. */
  end(): void {
    this.#close(false, undefined);
  }

  /** The consumer sees this error after the buffered items. */
  fail(error: unknown): void {
    this.#close(true, error);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#items.length > 0) return Promise.resolve({ value: this.#items.shift() as T, done: false });
    if (this.#closed) {
      return this.#failed ? Promise.reject(this.#error) : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      this.#pending = { resolve, reject };
    });
  }

  #close(failed: boolean, error: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#failed = failed;
    this.#error = error;
    if (this.#pending) {
      const pending = this.#pending;
      this.#pending = undefined;
      if (failed) pending.reject(error);
      else pending.resolve({ value: undefined, done: true });
    }
  }
}
