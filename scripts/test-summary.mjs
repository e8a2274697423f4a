// A node:test reporter beside the usual one: it collects the failed tests and the counts, and writes them as one
// JSON line when the run ends; scripts/run-tests.mjs prints them last, so a failure is not lost in the log.
import { relative } from 'node:path';

export default async function* summary(source) {
  const failed = [];
  let passed = 0;
  let skipped = 0;
  for await (const event of source) {
    const d = event.data;
    if (event.type === 'test:fail') {
      // A suite (or a file) that failed because a test inside it did: the test itself is listed.
      if (d.details?.error?.failureType === 'subtestsFailed') continue;
      failed.push({ file: d.file ? relative(process.cwd(), d.file) : '', name: d.name === d.file ? '(the file itself: it failed outside its tests)' : d.name });
    } else if (event.type === 'test:pass' && d.details?.type !== 'suite') {
      if (d.skip !== undefined || d.todo !== undefined) skipped++;
      else passed++;
    }
  }
  yield JSON.stringify({ failed, passed, skipped }) + '\n';
}
