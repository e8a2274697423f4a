/**
 * Live multi-turn episodes of the environment server. Each session owns one Episode (its own turn
 * counter and task), is reachable only by its random id, runs one step at a time, and expires after
 * `ttlMs` without a request; the store never holds more than `max` sessions nor more than `maxBytes`
 * bytes of their text (questions, schema prompts, turns, observations: what makes a session big; a count
 * alone let 60 sessions of 4 MB questions take 300 MB).
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
  /** Bytes of text this session holds (counted against the store's maxBytes). */
  bytes: number;
}

/** What a string costs in memory, about: V8 keeps one- or two-byte strings; UTF-8 length is a fair bound for the first. */
export const textBytes = (...texts: (string | undefined)[]): number => texts.reduce((n, t) => n + (t ? Buffer.byteLength(t) : 0), 0);

export class SessionStore {
  private readonly sessions = new Map<string, EnvSession>();
  private readonly sweeper: NodeJS.Timeout;
  private held = 0;
  /** Sessions dropped for idleness since start (the bench reports it). */
  expired = 0;

  constructor(
    readonly max: number,
    readonly ttlMs: number,
    readonly maxBytes: number = Number.POSITIVE_INFINITY,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(ttlMs / 4, 30_000)));
    this.sweeper.unref();
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Bytes of text the open sessions hold. */
  get bytes(): number {
    return this.held;
  }

  /** A new session holding `bytes`, or undefined when the store is full (after dropping expired ones). */
  create(task: SqlTask, episode: Episode, rewards: RewardSpec[], bytes = 0): EnvSession | undefined {
    if (this.sessions.size >= this.max || this.held + bytes > this.maxBytes) this.sweep();
    if (this.sessions.size >= this.max || this.held + bytes > this.maxBytes) return undefined;
    const s: EnvSession = { id: randomUUID(), task, episode, rewards, turns: [], toolCalls: 0, done: false, busy: false, lastUsed: this.now(), bytes };
    this.held += bytes;
    this.sessions.set(s.id, s);
    return s;
  }

  /** Count `bytes` more against `s`; false (nothing counted) when that would pass maxBytes. */
  grow(s: EnvSession, bytes: number): boolean {
    if (this.held + bytes > this.maxBytes) this.sweep();
    if (this.held + bytes > this.maxBytes) return false;
    s.bytes += bytes;
    this.held += bytes;
    return true;
  }

  private drop(id: string): boolean {
    const s = this.sessions.get(id);
    if (!s) return false;
    this.held -= s.bytes;
    return this.sessions.delete(id);
  }

  /** The live session with this id (touching it), or undefined when unknown or expired. */
  get(id: string): EnvSession | undefined {
    const s = this.sessions.get(id);
    if (!s) return undefined;
    if (this.now() - s.lastUsed > this.ttlMs && !s.busy) {
      this.drop(id);
      this.expired++;
      return undefined;
    }
    s.lastUsed = this.now();
    return s;
  }

  delete(id: string): boolean {
    return this.drop(id);
  }

  sweep(): void {
    const t = this.now();
    for (const [id, s] of this.sessions) {
      if (!s.busy && t - s.lastUsed > this.ttlMs) {
        this.drop(id);
        this.expired++;
      }
    }
  }

  close(): void {
    clearInterval(this.sweeper);
    this.sessions.clear();
    this.held = 0;
  }
}
