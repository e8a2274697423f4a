/**
 * Stages written beside this module (LLM audit, K-cycle refinement) are loaded when present, so
 * the factory runs with or without them. Each is expected to export a factory function returning a
 * Stage<SynthPair, SynthPair>: llm-audit.ts `llmAuditStage(opts)`, refine.ts `refineStage(opts)`.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Stage, SynthPair } from './types.ts';

type StageFactory = (opts: Record<string, unknown>) => Stage<SynthPair, SynthPair>;

export async function loadOptionalStage(file: string, exportName: string): Promise<StageFactory | null> {
  const url = new URL(`./${file}`, import.meta.url);
  if (!existsSync(fileURLToPath(url))) return null;
  const mod = (await import(url.href)) as Record<string, unknown>;
  const f = mod[exportName];
  return typeof f === 'function' ? (f as StageFactory) : null;
}
