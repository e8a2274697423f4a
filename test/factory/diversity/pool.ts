/**
 * A skewed candidate pool for selection tests: most queries are one common shape (a filtered
 * lookup); a minority spread over many rarer shapes. A random subset mostly repeats the common
 * shape; a covering subset should reach the rare ones.
 */
import { Rng } from '../../../src/util/rng.ts';

const TABLES = ['singer', 'concert', 'stadium', 'album', 'track'];
const COLS = ['name', 'age', 'year', 'capacity', 'price'];

const RARE: Array<(t: string, c: string, v: number) => { sql: string; q: string }> = [
  (t) => ({ sql: `SELECT count(*) FROM ${t}`, q: `How many ${t}s are there?` }),
  (t, c) => ({ sql: `SELECT ${c}, count(*) FROM ${t} GROUP BY ${c}`, q: `For each ${c}, how many ${t}s have it?` }),
  (t, c, v) => ({ sql: `SELECT ${c} FROM ${t} GROUP BY ${c} HAVING count(*) > ${v}`, q: `Which ${c} values occur in more than ${v} ${t}s?` }),
  (t, c) => ({ sql: `SELECT name FROM ${t} ORDER BY ${c} DESC LIMIT 1`, q: `Which ${t} has the largest ${c}?` }),
  (t, c) => ({ sql: `SELECT avg(${c}) FROM ${t}`, q: `What is the average ${c} of ${t}s?` }),
  (t) => ({ sql: `SELECT T1.name FROM ${t} AS T1 JOIN concert AS T2 ON T1.id = T2.sid`, q: `List names of ${t}s that have a concert.` }),
  (t) => ({ sql: `SELECT name FROM ${t} WHERE id NOT IN (SELECT sid FROM concert)`, q: `Which ${t}s never had a concert?` }),
  (t, c) => ({ sql: `SELECT name FROM ${t} WHERE ${c} > (SELECT avg(${c}) FROM ${t})`, q: `Which ${t}s have ${c} above average?` }),
  (t) => ({ sql: `SELECT name FROM ${t} UNION SELECT name FROM stadium`, q: `All names of ${t}s or stadiums.` }),
  (t) => ({ sql: `SELECT name FROM ${t} INTERSECT SELECT name FROM album`, q: `Names shared by ${t}s and albums.` }),
  (t) => ({ sql: `SELECT name FROM ${t} EXCEPT SELECT name FROM track`, q: `Names of ${t}s that are not tracks.` }),
  (t, c) => ({ sql: `SELECT sum(CASE WHEN ${c} > 10 THEN 1 ELSE 0 END) FROM ${t}`, q: `How many ${t}s have ${c} over 10?` }),
  (t, c) => ({ sql: `SELECT max(${c}) - min(${c}) FROM ${t}`, q: `What is the range of ${c} among ${t}s?` }),
  (t, c) => ({ sql: `SELECT DISTINCT ${c} FROM ${t}`, q: `List the distinct ${c} values of ${t}s.` }),
  (t) => ({ sql: `SELECT T1.name, count(*) FROM ${t} AS T1 JOIN concert AS T2 ON T1.id = T2.sid JOIN stadium AS T3 ON T2.stid = T3.id GROUP BY T1.name ORDER BY count(*) DESC LIMIT 3`, q: `Top three ${t}s by number of concerts in stadiums.` }),
];

export interface PoolItem {
  id: string;
  sql: string;
  question: string;
  difficulty: string;
}

export function skewedPool(size: number, seed: number, commonShare = 0.75): PoolItem[] {
  const rng = new Rng(seed);
  const out: PoolItem[] = [];
  for (let i = 0; i < size; i++) {
    const t = rng.pick(TABLES);
    const c = rng.pick(COLS);
    const v = 1 + rng.int(50);
    if (rng.next() < commonShare) {
      out.push({ id: `c${i}`, sql: `SELECT name FROM ${t} WHERE ${c} = ${v}`, question: `What is the name of the ${t} whose ${c} is ${v}?`, difficulty: 'simple' });
    } else {
      const k = rng.int(RARE.length);
      const r = RARE[k](t, c, v);
      out.push({ id: `r${i}`, sql: r.sql, question: r.q, difficulty: k < 5 ? 'moderate' : 'challenging' });
    }
  }
  return out;
}
