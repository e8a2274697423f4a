/**
 * Scaffolding hints for a text-to-SQL task, from abstract to concrete (Scaf-GRPO, "Scaffolded Group Relative
 * Policy Optimization", 2025): the RL trainer puts them in the prompt of a task no rollout solves.
 */

/** The tiers in order: what to read, how the query is shaped, how it starts. */
export const HINT_TIERS = ['knowledge', 'planning', 'solution'] as const;

/**
 * The hint text of a tier for a text-to-SQL task, derived from the gold query: the tables it reads (knowledge),
 * its clause skeleton with names and literals elided (planning), or its first half (solution).
 */
export function scafSqlHint(tier: (typeof HINT_TIERS)[number], goldSql: string): string {
  const sql = goldSql.trim().replace(/\s+/g, ' ');
  if (tier === 'knowledge') {
    const tables = [...sql.matchAll(/\b(?:from|join)\s+([`"[]?[\w.]+[`"\]]?)/gi)].map((m) => m[1]);
    return `Hint: the answer reads the table${tables.length === 1 ? '' : 's'} ${[...new Set(tables)].join(', ')}.`;
  }
  if (tier === 'planning') {
    const keywords = sql.match(/\b(select|distinct|count|sum|avg|min|max|from|join|on|where|and|or|not|in|like|between|group by|having|order by|asc|desc|limit|union|intersect|except)\b/gi) ?? [];
    return `Hint: the query has the shape ${keywords.map((k) => k.toUpperCase()).join(' ')}.`;
  }
  const words = sql.split(' ');
  return `Hint: the query starts with ${words.slice(0, Math.max(1, Math.ceil(words.length / 2))).join(' ')}`;
}
