// The memory bench's load measure, in a process of its own so that its peak RSS is the reader's alone: the store at
// argv[2] read and indexed as the answer path does (MemoryStore.snapshot, then MemoryIndex), one JSON line out.
import { performance } from 'node:perf_hooks';
import { MemoryStore } from '../src/memory/store.ts';
import { MemoryIndex } from '../src/answer/memory.ts';

const baseRss = process.memoryUsage().rss;
const t0 = performance.now();
const cpu0 = process.cpuUsage();
const reader = MemoryStore.open(process.argv[2]);
const index = new MemoryIndex(reader.snapshot());
const cpu = process.cpuUsage(cpu0);
const ms = performance.now() - t0;
if (index.nearest('longest tracks', 1).length !== 1) throw new Error('bench: the index recalls nothing');
reader.close();
console.log(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, baseRssMiB: baseRss / 2 ** 20, peakRssMiB: process.resourceUsage().maxRSS / 1024 }));
