// The layout is the architecture: data flows one way through the folders of src/, and no file imports
// itself back through a cycle. This test reads every import (type-only ones too) and fails on either.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** Upstream first: a folder may import only from folders before it (and itself). */
const LAYERS = ['errors.ts', 'util', 'sql', 'memory', 'prompt', 'llm', 'data', 'factory', 'model', 'agent', 'search', 'answer', 'judge', 'train', 'rl', 'eval', 'pipeline', 'chart', 'server', 'cli'];
const SRC = resolve('src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : /\.(tsx?|mjs)$/.test(n) ? [p] : [];
  });
}

/** A static import or re-export of a relative path. */
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s*['"](\.[^'"]+)['"]/g;

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) out.push(resolve(dirname(file), m[1]));
  for (const m of text.matchAll(/import\(\s*['"](\.[^'"]+)['"]\s*\)/g)) out.push(resolve(dirname(file), m[1]));
  return out.filter((p) => p.startsWith(SRC));
}

const layerOf = (file: string): string => relative(SRC, file).split('/')[0];

test('no folder of src/ imports a folder downstream of it, even by type', () => {
  const bad: string[] = [];
  for (const f of files(SRC)) {
    const from = LAYERS.indexOf(layerOf(f));
    assert.ok(from >= 0, `${relative(SRC, f)} is in a folder the layer list does not name`);
    for (const target of imports(f)) {
      const to = LAYERS.indexOf(layerOf(target));
      if (to > from) bad.push(`${relative(SRC, f)} -> ${relative(SRC, target)}`);
    }
  }
  assert.deepEqual(bad, []);
});

/**
 * Rooms inside a layer, upstream first, as LAYERS orders the layers ('*' = the layer's other files). In agent/:
 * the protocol and the Environment contract; constrained decoding (it knows the protocol's tags, not the loop);
 * the policies (they know no environment); the loop (episode, SQL environment, tasks); cold-start episodes
 * written through the environment, which nothing in the loop needs.
 */
const ROOMS: Record<string, string[]> = {
  agent: ['protocol.ts', 'types.ts', 'decoding', 'policies', '*', 'cold-start'],
};

function roomOf(file: string): { layer: string; room: number } | null {
  const [layer, room] = relative(SRC, file).split('/');
  const rooms = ROOMS[layer];
  if (!rooms || room === undefined) return null;
  const i = rooms.indexOf(room);
  return { layer, room: i >= 0 ? i : rooms.indexOf('*') };
}

test('inside a layer, no room imports a room after it (agent: decoding and policies know no loop, nothing imports cold-start)', () => {
  const bad: string[] = [];
  for (const f of files(SRC)) {
    const from = roomOf(f);
    if (!from) continue;
    for (const target of imports(f)) {
      const to = roomOf(target);
      if (to && to.layer === from.layer && to.room > from.room) bad.push(`${relative(SRC, f)} -> ${relative(SRC, target)}`);
    }
  }
  assert.deepEqual(bad, []);
});

/** Each import cycle of the graph, as 'a -> b -> a' with paths relative to root. */
function cyclesOf(graph: Map<string, string[]>, root: string): string[] {
  const state = new Map<string, 1 | 2>();
  const cycles: string[] = [];
  const visit = (f: string, path: string[]): void => {
    if (state.get(f) === 2) return;
    if (state.get(f) === 1) {
      cycles.push([...path.slice(path.indexOf(f)), f].map((p) => relative(root, p)).join(' -> '));
      return;
    }
    state.set(f, 1);
    for (const t of graph.get(f) ?? []) visit(t, [...path, f]);
    state.set(f, 2);
  };
  for (const f of graph.keys()) visit(f, []);
  return cycles;
}

test('no file-level import cycles in src/', () => {
  assert.deepEqual(cyclesOf(new Map(files(SRC).map((f) => [f, imports(f)])), SRC), []);
});

test('the web app has no file-level import cycles either (pages link through routes.ts, not main.tsx)', () => {
  const WEB = resolve('web/src');
  const webFiles = files(WEB).filter((f) => /\.tsx?$/.test(f));
  const graph = new Map(webFiles.map((f) => [f, [...readFileSync(f, 'utf8').matchAll(IMPORT)].map((m) => resolve(dirname(f), m[1]))]));
  assert.deepEqual(cyclesOf(graph, WEB), []);
});

/** Literal homes: a default written twice is a bug (issue 50). Each pattern may match in the one file named, nowhere else in src/. */
test('tokens per turn, the episode token budget and the schema budget are each written in one place', () => {
  const homes: [RegExp, string][] = [
    [/\b(?:TURN_TOKENS|maxTurnTokens)\s*[:=]\s*96\b|default\(96\)/, 'prompt/contract.ts'],
    [/(?:TURN_TOKENS|[tT]urnTokens)\s*(?:\?\?|=|:)\s*256\b/, 'prompt/contract.ts'],
    [/\b(?:RESPONSE_TOKENS|maxResponseTokens)\s*[:=]\s*320\b|default\(320\)/, 'rl/train-config.ts'],
    [/schemaChars[^\n]*default\(1800\)/, 'prompt/settings.ts'],
  ];
  for (const [pattern, home] of homes) {
    const where = files(SRC).filter((f) => pattern.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f));
    assert.deepEqual(where, [home], `${pattern} is written in ${where.join(', ')}`);
  }
});
