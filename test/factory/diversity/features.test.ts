import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  sqlFeatures,
  sqlSkeleton,
  spiderHardness,
  spiderHardnessCounts,
  featureVector,
  structureKey,
  FEATURE_DIM,
  FEATURE_NAMES,
} from '../../../src/sql/features.ts';

const BIG =
  "SELECT T1.name, count(*) FROM singer AS T1 JOIN concert AS T2 ON T1.id = T2.sid WHERE T1.age > 20 AND T1.name LIKE '%a%' OR T2.year = 2014 GROUP BY T1.name HAVING count(*) > 1 ORDER BY count(*) DESC LIMIT 3";

test('features of a join/group/having/order/limit query', () => {
  const f = sqlFeatures(BIG);
  assert.equal(f.parsed, true);
  assert.deepEqual(f.clauses, { where: true, groupBy: true, having: true, orderBy: true, limit: true, distinct: false });
  assert.equal(f.joins, 1);
  assert.deepEqual(f.tables, ['concert', 'singer']);
  assert.deepEqual(f.aggregates, { count: 3 }); // select, having, order by
  assert.equal(f.conditions, 5); // ON 1 + WHERE 3 + HAVING 1
  assert.equal(f.ors, 1);
  assert.equal(f.likes, 1);
  assert.equal(f.selectColumns, 2);
  assert.equal(f.nestingDepth, 0);
  assert.equal(structureKey(f), 'WGHOL|j1|a:count|n0|||');
});

test('features: CASE, CAST, arithmetic, functions, nesting, DISTINCT', () => {
  const f = sqlFeatures(
    "SELECT DISTINCT CAST(SUM(CASE WHEN a > 0 THEN 1 ELSE 0 END) AS REAL) * 100 / COUNT(*), strftime('%Y', d) FROM t WHERE b IN (SELECT b FROM u WHERE c = (SELECT MAX(c) FROM v))",
  );
  assert.equal(f.parsed, true);
  assert.equal(f.clauses.distinct, true);
  assert.equal(f.caseCount, 1);
  assert.equal(f.arithmetic, 2);
  assert.deepEqual(f.functions, ['cast', 'strftime']);
  assert.deepEqual(f.aggregates, { sum: 1, count: 1, max: 1 });
  assert.equal(f.nestingDepth, 2);
  assert.equal(f.subqueries, 2);
  assert.deepEqual(f.tables, ['t', 'u', 'v']);
});

test('INTERSECT/EXCEPT (rejected by the sqlite grammar) are parsed part by part', () => {
  const f = sqlFeatures('SELECT x FROM t WHERE y = 1 INTERSECT SELECT x FROM u');
  assert.equal(f.parsed, true);
  assert.deepEqual(f.setOps, ['intersect']);
  assert.deepEqual(f.tables, ['t', 'u']);
  assert.equal(sqlFeatures('SELECT x FROM t EXCEPT SELECT x FROM u').setOps[0], 'except');
  assert.equal(sqlFeatures("SELECT a FROM t WHERE s = 'x UNION y' UNION ALL SELECT a FROM u").setOps[0], 'union all');
});

test('unparseable SQL falls back to token features, flagged', () => {
  const f = sqlFeatures('SELECT a, count(b) FROM t JOIN u ON t.id = u.id GROUP BY a ORDER BY a DESC NULLS LAST');
  assert.equal(f.parsed, false);
  assert.equal(f.clauses.groupBy, true);
  assert.equal(f.clauses.orderBy, true);
  assert.equal(f.joins, 1);
  assert.deepEqual(f.tables, ['t', 'u']);
  assert.deepEqual(f.aggregates, { count: 1 });
  const g = sqlFeatures('this is not sql at all (');
  assert.equal(g.parsed, false);
  assert.equal(featureVector(g).length, FEATURE_DIM);
});

test('Spider hardness (eval_hardness) on hand-counted queries', () => {
  // c1 = components (WHERE/GROUP/ORDER/LIMIT, tables-1, OR, LIKE); c2 = nested + set op; others.
  const cases: Array<[string, [number, number, number], string]> = [
    ['SELECT count(*) FROM singer', [0, 0, 0], 'easy'],
    ['SELECT name, country, age FROM singer ORDER BY age DESC', [1, 0, 1], 'medium'],
    ['SELECT a, b FROM t WHERE x = 1 AND y = 2', [1, 0, 2], 'medium'],
    ["SELECT a FROM t WHERE x = 1 AND y LIKE 'a%'", [2, 0, 1], 'medium'],
    ['SELECT T2.name FROM concert AS T1 JOIN stadium AS T2 ON T1.sid = T2.sid WHERE T1.year = 2014 GROUP BY T2.name', [3, 0, 0], 'hard'],
    ['SELECT name FROM stadium WHERE sid NOT IN (SELECT sid FROM concert)', [1, 1, 0], 'hard'],
    ['SELECT x FROM t EXCEPT SELECT x FROM u', [0, 1, 0], 'hard'],
    // Spider's count_agg reads the NOT flag of WHERE units: two NOTs count as "aggregates > 1".
    ['SELECT a, b FROM t WHERE NOT x = 1 AND NOT y = 2', [1, 0, 3], 'hard'],
    ['SELECT name FROM a WHERE id IN (SELECT aid FROM b) UNION SELECT name FROM c', [1, 2, 0], 'extra'],
    [BIG, [7, 0, 3], 'extra'],
  ];
  for (const [sql, [c1, c2, o], want] of cases) {
    const c = spiderHardnessCounts(sql);
    assert.deepEqual([c.component1, c.component2, c.others], [c1, c2, o], sql);
    assert.equal(spiderHardness(sql), want, sql);
    assert.equal(sqlFeatures(sql).hardness, want, sql);
  }
});

test('skeleton masks literals, collapses IN lists, keeps binary minus; optional identifier masking', () => {
  const a = sqlSkeleton("select name from singer where age > 20 and country = 'France'");
  const b = sqlSkeleton("SELECT  name FROM Singer WHERE age > 35 AND country = 'Japan';");
  assert.equal(a, b);
  assert.equal(a, 'SELECT name FROM singer WHERE age > ? AND country = ?');
  assert.equal(sqlSkeleton('SELECT a - 5, -3 FROM t WHERE a = -5 OR b IN (-1, 2)'), 'SELECT a - ?, ? FROM t WHERE a = ? OR b IN (?)');
  assert.equal(sqlSkeleton('SELECT a FROM t WHERE b = "x"'), 'SELECT a FROM t WHERE b = ?');
  assert.equal(sqlSkeleton('SELECT `My Col` FROM t'), 'SELECT "my col" FROM t');
  assert.equal(
    sqlSkeleton('SELECT T1.a, count(*) FROM x AS T1 WHERE T1.b = 3', { maskIdentifiers: true }),
    'SELECT _, count(*) FROM _ AS _ WHERE _ = ?',
  );
  assert.notEqual(sqlSkeleton('SELECT a FROM t WHERE b = 1'), sqlSkeleton('SELECT a FROM t WHERE b > 1'));
});

test('feature vector: fixed length, bounded, names aligned', () => {
  assert.equal(FEATURE_NAMES.length, FEATURE_DIM);
  const v = featureVector(sqlFeatures(BIG));
  assert.equal(v.length, FEATURE_DIM);
  for (const x of v) assert.ok(x >= 0 && x <= 1);
  const at = (n: (typeof FEATURE_NAMES)[number]): number => v[FEATURE_NAMES.indexOf(n)];
  assert.equal(at('having'), 1);
  assert.equal(at('joins'), 1 / 3);
  assert.equal(at('agg_count'), 1);
  assert.equal(at('agg_sum'), 0);
  assert.equal(at('hard_extra'), 1);
  assert.equal(at('hard_easy'), 0);
});
