/** The flags of the episode and the answer path that `agro ask` and `agro predict` share: one home for their help and defaults. */
import { Option, type Command } from 'commander';
import { EPISODE_MODES } from '../agent/episode.ts';
import { SEARCH_SAMPLES } from '../answer/answer.ts';
import { UNTRAINED_TURN_TOKENS } from '../prompt/contract.ts';
import { loadJudge } from '../judge/load.ts';
import type { CandidateJudge } from '../answer/answer.ts';
import { numberArg, repeatable } from './options.ts';
import { printWarning } from './prompt-options.ts';

export function addAnswerOptions(cmd: Command): Command {
  cmd
    .addOption(new Option('--mode <mode>', 'agent: multi-turn with the SQL tool; direct: one turn').choices([...EPISODE_MODES]).default('agent'))
    .option('--max-turn-tokens <n>', `new tokens per turn (default: the policy's prompt contract, else ${UNTRAINED_TURN_TOKENS})`, numberArg('--max-turn-tokens', { min: 1 }))
    .option('--retries <n>', "execution-guided decoding: an answer whose SQL does not run, or a turn with no valid action, is sampled again (at 0.7) up to n times, the first draft that runs (or, for a turn without action, calls the tool) kept", numberArg('--retries', { min: 0, max: 16 }), 0)
    .option('--search-samples <k>', 'sampled episodes (at 0.7) beside the greedy one as candidates', numberArg('--search-samples', { min: 0, max: 32 }), SEARCH_SAMPLES);
  return addJudgeOption(addMemoryOption(cmd));
}

/** `--judge DIR` / `--no-judge`: ask, predict, chat and serve. */
export function addJudgeOption(cmd: Command): Command {
  return cmd
    .option('--judge <dir>', "the learned judge whose calibrated probability is the answer's confidence (default: the built-in one, models/judge)")
    .option('--no-judge', "no judge: the transparent ranker's confidence and low mark");
}

/** The judge flags as the answer path's spec: a folder, false (none), or undefined (the built-in one). */
export function judgeSpec(o: { judge?: string | boolean }): string | false | undefined {
  return typeof o.judge === 'string' ? o.judge : o.judge === false ? false : undefined;
}

/** The judge the flags name, loaded (a missing built-in one falls back to the transparent ranker with one line). */
export function judgeFromCli(o: { judge?: string | boolean }): CandidateJudge | undefined {
  return loadJudge(judgeSpec(o), printWarning);
}

/** `--memory FILE` (repeatable): ask, predict and chat. */
export function addMemoryOption(cmd: Command): Command {
  return cmd.option('--memory <file>', "a memory file (agro memory build), beside those the policy's prompt contract names; repeat for more", repeatable, []);
}
