import { test } from 'node:test';
import assert from 'node:assert/strict';
import { suggestQuestions, SUGGESTIONS } from '../../src/answer/suggest.ts';
import type { MemoryEntry } from '../../src/memory/entry.ts';

const entry = (sql: string, questions: string[], source: MemoryEntry['source'] = 'factory'): MemoryEntry => ({ sql, questions, source });

const MEMORY: MemoryEntry[] = [
  entry('SELECT COUNT(*) FROM customers', ['How many customers are there?']),
  entry("SELECT first_name FROM customers WHERE country = 'France'", ['Which customers live in France?']),
  // The same shape with another value: one of the two at most.
  entry("SELECT first_name FROM customers WHERE country = 'Brazil'", ['Which customers live in Brazil?']),
  entry('SELECT name FROM genres', ['List the genres.']),
  entry('SELECT c.first_name, SUM(i.total) FROM customers c JOIN invoices i ON i.customer_id = c.customer_id GROUP BY c.customer_id', ['How much has each customer spent?']),
  entry('SELECT MAX(total) FROM invoices', ['What is the largest invoice total?']),
  entry('SELECT country FROM customers GROUP BY country ORDER BY COUNT(*) DESC LIMIT 1', ['Which country has the most customers?'], 'person'),
];

test('suggestions: questions of the memory about the same tables, closest table sets first, a person’s pair first at a tie, one per shape, at most three', () => {
  const got = suggestQuestions(MEMORY, { sql: "SELECT last_name FROM customers WHERE city = 'Paris'", question: 'Customers in Paris?' });
  assert.equal(got.length, SUGGESTIONS);
  // Only customers' queries (same table set: overlap 1) come before the join (overlap 1/2); the person's pair leads the ties.
  assert.deepEqual(got, ['Which country has the most customers?', 'How many customers are there?', 'Which customers live in France?']);
  assert.ok(!got.includes('List the genres.'), 'another table is not suggested');
});

test('suggestions: never the question just asked, nor the answered query’s own shape; none for a query that reads no table', () => {
  const got = suggestQuestions(MEMORY, { sql: "SELECT first_name FROM customers WHERE country = 'Chile'", question: 'how many customers are there' }, 5);
  assert.ok(!got.includes('How many customers are there?'), 'the question asked (in other case and punctuation)');
  assert.ok(!got.some((q) => /live in/.test(q)), `the answered shape with other values: ${got.join(' | ')}`);
  assert.deepEqual(got, ['Which country has the most customers?', 'How much has each customer spent?']);
  assert.deepEqual(suggestQuestions(MEMORY, { sql: 'SELECT 1', question: 'one?' }), []);
  assert.deepEqual(suggestQuestions([], { sql: 'SELECT name FROM genres', question: 'genres?' }), []);
});

test('suggestions: a join suggests the pairs about either of its tables, the one covering both first', () => {
  const got = suggestQuestions(MEMORY, { sql: 'SELECT c.country, COUNT(*) FROM customers c JOIN invoices i ON i.customer_id = c.customer_id GROUP BY c.country', question: 'Invoices per country?' });
  // Both tables (Jaccard 1) first; then each half-overlap in the memory's order, the person's pair first.
  assert.deepEqual(got, ['How much has each customer spent?', 'Which country has the most customers?', 'How many customers are there?']);
  const invoices = suggestQuestions(MEMORY, { sql: 'SELECT SUM(total) FROM invoices', question: 'Total sales?' });
  assert.deepEqual(invoices, ['What is the largest invoice total?', 'How much has each customer spent?']);
});
