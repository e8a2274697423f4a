/**
 * Prints the human shape mix of src/factory/shapes.ts (HUMAN_SHAPES) from Spider's TRAIN gold SQL, with
 * the factory's own shape classifier (realism.ts queryShape): the share in percent of each shape,
 * shapes under 0.15% left out. Never run it on a measurement set (spider-dev-open, kaggledbqa).
 *
 *   node --import tsx scripts/human-shapes.ts [../shared/data/spider-train/gold.jsonl]
 */
import { readFileSync } from 'node:fs';
import { humanShapeMix } from '../src/factory/shapes.ts';
import { queryShape } from '../src/factory/realism.ts';

const file = process.argv[2] ?? '../shared/data/spider-train/gold.jsonl';
if (/dev|kaggle/i.test(file)) throw new Error('human-shapes: the train split only');
const sqls = readFileSync(file, 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .map((l) => (JSON.parse(l) as { query: string }).query);
console.log(`${sqls.length} queries`);
console.log(JSON.stringify(humanShapeMix(sqls.map(queryShape)), null, 2));
