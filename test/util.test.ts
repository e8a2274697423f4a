import { test } from 'node:test';
import { jsonCopy } from '../src/util/json-copy.ts';
import { fnv1a, fnv1aSeeds } from '../src/util/hash.ts';
import { memoized } from '../src/util/memo.ts';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../src/util/rng.ts';
import { displayPath, writeJsonAtomic } from '../src/util/fs.ts';

test('Rng is reproducible for a seed and restorable from its state', () => {
  const a = new Rng(42);
  const b = new Rng(42);
  const xs = Array.from({ length: 5 }, () => a.next());
  assert.deepEqual(xs, Array.from({ length: 5 }, () => b.next()));
  assert.notDeepEqual(xs, Array.from({ length: 5 }, () => new Rng(43).next()));
  const saved = a.state;
  const next = a.next();
  assert.equal(Rng.fromState(saved).next(), next);
  for (const x of xs) assert.ok(x >= 0 && x < 1);
});

test('Rng.int stays in range and covers it', () => {
  const r = new Rng(1);
  const seen = new Set<number>();
  for (let i = 0; i < 1000; i++) seen.add(r.int(7));
  assert.deepEqual([...seen].sort(), [0, 1, 2, 3, 4, 5, 6]);
});

test('writeJsonAtomic leaves only the final file behind', () => {
  const dir = mkdtempSync(join(tmpdir(), 'agro-fs-'));
  const p = join(dir, 'sub', 'x.json');
  writeJsonAtomic(p, { a: 1 });
  writeJsonAtomic(p, { a: 2 });
  assert.deepEqual(JSON.parse(readFileSync(p, 'utf8')), { a: 2 });
  assert.deepEqual(readdirSync(join(dir, 'sub')), ['x.json']);
});

test('displayPath: relative inside the working directory, absolute outside it', () => {
  assert.equal(displayPath(join(process.cwd(), 'runs', 'x')), join('runs', 'x'));
  assert.equal(displayPath(process.cwd()), '.');
  assert.equal(displayPath(join(tmpdir(), 'agro-run')), join(tmpdir(), 'agro-run'));
  assert.equal(displayPath(join(process.cwd(), '..x', 'run')), join('..x', 'run'), 'a folder named ..x is inside');
  assert.equal(displayPath(join(process.cwd(), '..', 'elsewhere')), join(process.cwd(), '..', 'elsewhere').replace(/\/[^/]+\/\.\./, ''));
});

test('jsonCopy gives what a JSON round trip gives, as a copy that shares nothing', () => {
  const cases: unknown[] = [
    { kind: 'select', a: [1, -0, NaN, Infinity, undefined, () => 1, 'x'], b: { c: undefined, d: null, e: false, 2: 'two', 1: 'one' }, f: Symbol('s') },
    [[{ x: [] }], {}, '', 0.1 + 0.2],
    { when: new Date(0), inner: { toJSON: () => 'json' }, set: new Set([1]) },
    'text',
    7,
    null,
  ];
  for (const v of cases) assert.deepStrictEqual(jsonCopy(v), JSON.parse(JSON.stringify(v)));
  assert.equal(jsonCopy(undefined), undefined);
  assert.equal(Object.is(jsonCopy(-0), 0), true);
  const src = { a: { b: [1, { c: 2 }] } };
  const out = jsonCopy(src);
  (out.a.b[1] as { c: number }).c = 3;
  assert.equal((src.a.b[1] as { c: number }).c, 2);
  assert.throws(() => jsonCopy({ n: 1n }), TypeError);
});

test('fnv1aSeeds gives fnv1a(text, seed) for seeds 1..n in one pass', () => {
  for (const text of ['', 'a', 'how many singers', 'städte €', 'x'.repeat(300)]) {
    const out = fnv1aSeeds(text, new Uint32Array(70));
    out.forEach((h, i) => assert.equal(h, fnv1a(text, i + 1), `${text} seed ${i + 1}`));
  }
});

test('memoized answers each string once and starts over past its bound', () => {
  const calls: string[] = [];
  const f = memoized((s: string) => {
    calls.push(s);
    return s === 'none' ? undefined : s.toUpperCase();
  }, 3);
  assert.deepEqual(['a', 'b', 'a', 'none', 'none', 'b'].map(f), ['A', 'B', 'A', undefined, undefined, 'B']);
  assert.deepEqual(calls, ['a', 'b', 'none']);
  f('c'); // the fourth answer: the memory starts over with it
  f('a');
  assert.deepEqual(calls, ['a', 'b', 'none', 'c', 'a']);
});
