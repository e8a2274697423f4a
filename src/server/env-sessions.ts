/**
 * Live multi-turn episodes of the environment server. Each session owns one Episode (its own turn
 * counter and task), is reachable only by its random id, runs one step at a time, and expires after
 * `ttlMs` without a request; the store never holds more than `max`.
 */
import { randomUUID } from 'node:crypto';
import type { Episode } from '../agent/types.ts';
import type { SqlTask } from '../agent/sql-env.ts';
import type { RewardSpec } from '../rl/rewards.ts';

export interface EnvSession {
  id: string;
  task: SqlTask;
  episode: Episode;
  rewards: RewardSpec[];
  /** Assistant turns fed so far (the transcript the reward is computed on). */
  turns: string[];
  toolCalls: number;
  done: boolean;
  busy: boolean;
  lastUsed: number;
}

export class SessionStore {
  private readonly sessions = new Map<string, EnvSession>();
  private readonly sweeper: NodeJS.Timeout;
  /** Sessions dropped for idleness since start (the bench reports it). */
  expired = 0;

  constructor(
    readonly max: number,
    readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(ttlMs / 4, 30_000)));
    this.sweeper.unref();
  }

  get size(): number {
    return this.sessions.size;
  }

  /** A new session, or undefined when the store is full (after dropping expired ones). */
  create(task: SqlTask, episode: Episode, rewards: RewardSpec[]): EnvSession | undefined {
    if (this.sessions.size >= this.max) this.sweep();
    if (this.sessions.size >= this.max) return undefined;
    const s: EnvSession = { id: randomUUID(), task, episode, rewards, turns: [], toolCalls: 0, done: false, busy: false, lastUsed: this.now() };
    this.sessions.set(s.id, s);
    return s;
  }

  /** The live session with this id (touching it), or undefined when unknown or expired. */
  get(id: string): EnvSession | undefined {
    const s = this.sessions.get(id);
    if (!s) return undefined;
    if (this.now() - s.lastUsed > this.ttlMs && !s.busy) {
      this.sessions.delete(id);
      this.expired++;
      return undefined;
    }
    s.lastUsed = this.now();
    return s;
  }

  delete(id: string): boolean {
    return this.sessions.delete(id);
  }

  sweep(): void {
    const t = this.now();
    for (const [id, s] of this.sessions) {
      if (!s.busy && t - s.lastUsed > this.ttlMs) {
        this.sessions.delete(id);
        this.expired++;
      }
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.sessions.clear();
  }
}
