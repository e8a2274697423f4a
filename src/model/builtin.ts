/**
 * The models that ship with agro, by name. `base` is the base model `agro pretrain` made from the Spider
 * training databases (models/base/README.md is its card, with the command that reproduces it). Policies
 * are named by path everywhere; this is the one place a name stands for a folder of the installation.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AgroError } from '../errors.ts';

export const BUILTIN_MODELS = ['base'] as const;
export type BuiltinModel = (typeof BUILTIN_MODELS)[number];

/** Where a built-in model lives in this installation (it may be missing from a trimmed copy). */
export function builtinModelDir(name: BuiltinModel = 'base'): string {
  return fileURLToPath(new URL(`../../models/${name}`, import.meta.url));
}

export function isBuiltinModelName(s: string): s is BuiltinModel {
  return (BUILTIN_MODELS as readonly string[]).includes(s);
}

/**
 * A policy given as a built-in name becomes its folder; anything else is a path and is returned as is
 * (a folder named like a built-in is reached as ./base).
 */
export function resolveModelPath(spec: string): string {
  if (!isBuiltinModelName(spec)) return spec;
  const dir = builtinModelDir(spec);
  if (!existsSync(dir)) throw new AgroError('not_found', `the built-in ${spec} model is not in this installation (${dir}); make one with agro pretrain, or give --policy <checkpoint dir>`);
  return dir;
}
