// `npm run bench -- ray [--first 10] [--n 30] [--variants 1] [--seed 0] [--workers 2] [--root ../shared/data/spider-train/database] [--venv DIR] [--out runs/bench-ray]`
// The factory on a Ray cluster (integrations/python/agro_ray.py): `agro synth` over the first --first databases
// of --root, once one after another without Ray (--workers 0, the reference) and once as Ray tasks on a local
// cluster of --workers CPUs, each task its own agro process; then the Ray run again over its finished output (the
// resume: every database kept, nothing run). Pass rule: the merged dataset.jsonl and the manifest's databases are
// byte-for-byte and entry-for-entry the same in all three. Prints wall seconds, the speed ratio, Ray's start-up and
// its cost per task with nothing in it, and the load average (the machine may be shared: compare within a run).
// Needs a Python with ray (--venv, else AGRO_E2E_VENV or runs/e2e-trl/venv; pip install ray from the local index).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flag, num } from './_args.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface FanOut { databases: number; rows: number; refused: number; resumed: number; task_seconds: Record<string, number>; tasks_s: number; total_s: number; ray_init_s?: number; noop_task_ms?: number }

export async function run(args: string[]): Promise<void> {
  const first = num(args, '--first', 10);
  const workers = num(args, '--workers', 2);
  const dbRoot = resolve(flag(args, '--root', '../shared/data/spider-train/database'));
  if (!existsSync(dbRoot)) {
    console.log(`SKIP bench ray: no databases at ${dbRoot} (give --root DIR with <db_id>/<db_id>.sqlite)`);
    return;
  }
  const out = resolve(flag(args, '--out', join(ROOT, 'runs/bench-ray')));
  const py = join(resolve(flag(args, '--venv', process.env.AGRO_E2E_VENV ?? join(ROOT, 'runs/e2e-trl/venv'))), 'bin/python');
  if (!existsSync(py) || spawnSync(py, ['-c', 'import ray'], { encoding: 'utf8' }).status !== 0) {
    console.log(`SKIP bench ray: no Python with ray at ${py} (python3 -m venv DIR && DIR/bin/pip install ray, then --venv DIR)`);
    return;
  }
  const synth = ['--n', String(num(args, '--n', 30)), '--variants', String(num(args, '--variants', 1)), '--seed', String(num(args, '--seed', 0))];
  const fan = (dir: string, w: number): FanOut => {
    const r = spawnSync(py, [join(ROOT, 'integrations/python/agro_ray.py'), '--db-root', dbRoot, '--out', dir, '--first', String(first), '--workers', String(w), '--', ...synth], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`bench ray: agro_ray.py --workers ${w} exited ${r.status}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as FanOut;
  };
  const seqDir = join(out, 'sequential');
  const rayDir = join(out, 'ray');
  rmSync(out, { recursive: true, force: true });
  const load0 = loadavg()[0];
  const seq = fan(seqDir, 0);
  const ray = fan(rayDir, workers);
  const resumed = fan(rayDir, workers);
  const load1 = loadavg()[0];

  const same = (a: string, b: string, file: string): boolean => readFileSync(join(a, file), 'utf8') === readFileSync(join(b, file), 'utf8');
  const parts = (dir: string): string => JSON.stringify((JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { databases: unknown; refused: unknown }).databases);
  if (!same(seqDir, rayDir, 'dataset.jsonl') || parts(seqDir) !== parts(rayDir)) throw new Error('bench ray: the Ray fan-out\'s dataset differs from the sequential run\'s');
  if (resumed.resumed + resumed.refused !== resumed.databases) throw new Error(`bench ray: the resumed run ran ${resumed.databases - resumed.resumed - resumed.refused} finished databases again`);
  const sum = (f: FanOut): number => Object.values(f.task_seconds).reduce((a, b) => a + b, 0);
  console.log(`${first} databases of ${dbRoot} (${seq.rows} rows, ${seq.refused} refused by synth: no rows), agro synth ${synth.join(' ')}; ${cpus().length} CPUs, load ${load0.toFixed(1)} → ${load1.toFixed(1)}`);
  console.table([
    { run: 'sequential (no Ray)', wall_s: +seq.total_s.toFixed(1), task_s_sum: +sum(seq).toFixed(1), ray_init_s: '-', noop_task_ms: '-' },
    { run: `Ray, ${workers} workers`, wall_s: +ray.total_s.toFixed(1), task_s_sum: +sum(ray).toFixed(1), ray_init_s: +(ray.ray_init_s ?? 0).toFixed(1), noop_task_ms: +(ray.noop_task_ms ?? 0).toFixed(1) },
    { run: 'Ray, resumed', wall_s: +resumed.total_s.toFixed(1), task_s_sum: +sum(resumed).toFixed(1), ray_init_s: +(resumed.ray_init_s ?? 0).toFixed(1), noop_task_ms: +(resumed.noop_task_ms ?? 0).toFixed(1) },
  ]);
  const tasksOnly = seq.tasks_s / (ray.tasks_s - (ray.ray_init_s ?? 0));
  console.log(`speed: ${(seq.total_s / ray.total_s).toFixed(2)}× with Ray's start-up, ${tasksOnly.toFixed(2)}× without it; the same ${seq.rows} rows in all three runs; the resumed run ran no database again.`);
}
