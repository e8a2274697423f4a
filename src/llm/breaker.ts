/**
 * Stops calling an endpoint that keeps failing at the transport level (down, timing out), so a
 * pipeline of thousands of items degrades in seconds instead of retrying every one of them.
 */
import { LlmError } from './client.ts';
import type { LlmFailure } from './client.ts';

export class CircuitBreaker {
  private consecutive = 0;
  constructor(private readonly threshold = 3) {}
  get open(): boolean {
    return this.consecutive >= this.threshold;
  }
  success(): void {
    this.consecutive = 0;
  }
  /** Only transport failures count: a garbage reply says the endpoint is up. */
  failure(err: unknown): void {
    if (err instanceof LlmError && (err.failure === 'network' || err.failure === 'timeout' || (err.failure === 'http' && (err.status ?? 0) >= 500))) {
      this.consecutive++;
    }
  }
}

/** Short snake_case reason for counting a failed call. */
export function failureReason(err: unknown): LlmFailure | 'error' {
  return err instanceof LlmError ? err.failure : 'error';
}
