import type { Environment, Episode, TaskBase, Transcript } from '../../src/agent/types.ts';

/**
 * A one-turn toy task for trainer tests, whose reward is TRL's soft overlong punishment: short answers
 * (<= 2 policy tokens) are correct and score 0, long ones down to -1. A random policy rarely stops
 * early, so learning to emit <|end|> sooner is a real signal.
 */
export interface ToyTask extends TaskBase {
  difficulty?: string;
}

export class ShortAnswerEnv implements Environment<ToyTask> {
  readonly name = 'short';
  async start(): Promise<Episode> {
    return {
      opening: [
        { role: 'system', content: 'abc' },
        { role: 'user', content: 'def' },
      ],
      step: async (text: string) => ({ done: true as const, reason: 'answer' as const, answer: text }),
    };
  }
  async rewardContext(_task: ToyTask, t: Transcript) {
    return { completionTokens: t.policyTokens, correct: t.policyTokens <= 2 };
  }
}
