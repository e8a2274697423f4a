import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bestF1, entityMatchRate, exactMatch, normalizeAnswer, tokenF1 } from '../../src/search/match.ts';
import { answerAliases, entityAliases, numberToWords, yearWords } from '../../src/search/aliases.ts';

const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-9, `${a} vs ${b}`);

test('normalizeAnswer follows Search-R1: lowercase, delete punctuation, drop articles, collapse spaces', () => {
  assert.equal(normalizeAnswer('The  Beatles!'), 'beatles');
  assert.equal(normalizeAnswer('U.S.A.'), 'usa');
  assert.equal(normalizeAnswer('An apple, a day'), 'apple day');
  assert.equal(normalizeAnswer('Theatre'), 'theatre'); // "the" only as a whole word
  assert.equal(normalizeAnswer("rock-'n'-roll"), 'rocknroll'); // punctuation deleted, not spaced
  assert.equal(normalizeAnswer('  '), '');
});

test('exact match against the answer and its aliases', () => {
  assert.equal(exactMatch('the Beatles', ['Beatles']), true);
  assert.equal(exactMatch('Beatles band', ['Beatles']), false);
  assert.equal(exactMatch('Edwards, Nancy', ['Nancy Edwards', 'Edwards, Nancy']), true);
  assert.equal(exactMatch('forty-two', ['42', 'forty-two']), true);
  assert.equal(exactMatch('', ['x']), false);
});

test('token F1 (hand-computed)', () => {
  // pred {nancy, jane, edwards} vs gold {nancy, edwards}: common 2, P = 2/3, R = 1 → F1 = 0.8
  close(tokenF1('Nancy Jane Edwards', 'Nancy Edwards'), 0.8);
  // P = 1, R = 1/2 → 2/3
  close(tokenF1('Edwards', 'Nancy Edwards'), 2 / 3);
  // multiset: pred "rock rock" vs gold "rock": common 1, P = 1/2, R = 1 → 2/3
  close(tokenF1('rock rock', 'rock'), 2 / 3);
  // articles and punctuation vanish before counting: "The Rock!" vs "rock" → 1
  close(tokenF1('The Rock!', 'rock'), 1);
  assert.equal(tokenF1('no', 'yes'), 0);
  assert.equal(tokenF1('Jazz', 'Rock'), 0);
  // best over golds
  close(bestF1('Edwards', ['Rock', 'Nancy Edwards', 'Edwards']), 1);
});

test('entity match rate: case, punctuation, aliases, word boundaries', () => {
  const ents = [{ name: 'Al Green' }, { name: 'Nancy Edwards', aliases: ['Edwards, Nancy'] }, { name: "O'Brien" }];
  // 0 of 3
  assert.deepEqual(entityMatchRate('nothing relevant here', ents), { rate: 0, matched: [] });
  // case and punctuation around the mention
  assert.equal(entityMatchRate('I think it was AL GREEN, right?', ents).rate, 1 / 3);
  // alias form with the comma, and the apostrophe written or dropped or spaced
  assert.equal(entityMatchRate('the rep is edwards; nancy? no: Edwards, Nancy.', ents).rate, 1 / 3);
  assert.equal(entityMatchRate('OBrien', ents).rate, 1 / 3);
  assert.equal(entityMatchRate('o brien', ents).rate, 1 / 3);
  // all three, each counted once however often
  const r = entityMatchRate("Al Green then al green, then Nancy-Edwards and O'Brien", ents);
  assert.equal(r.rate, 1);
  assert.deepEqual(r.matched, ['Al Green', 'Nancy Edwards', "O'Brien"]);
  // word boundaries: "Al" is not inside "Album", "Green" alone is not "Al Green"
  assert.equal(entityMatchRate('Album Greenery', [{ name: 'Al' }]).rate, 0);
  assert.equal(entityMatchRate('the album by Al.', [{ name: 'Al' }]).rate, 1);
  assert.equal(entityMatchRate('Mr Green sang', ents).rate, 0);
  // accents: Müller matches Muller
  assert.equal(entityMatchRate('quinn muller', [{ name: 'Quinn Müller' }]).rate, 1);
  // no entities → 0; a name that normalizes to nothing is never matched
  assert.equal(entityMatchRate('anything', []).rate, 0);
  assert.equal(entityMatchRate('the the the', [{ name: 'The' }]).rate, 0);
});

test('aliases: numbers in words, ISO dates spelled out, people as "Last, First", & and "and"', () => {
  assert.equal(numberToWords(0), 'zero');
  assert.equal(numberToWords(42), 'forty-two');
  assert.equal(numberToWords(305), 'three hundred five');
  assert.equal(numberToWords(2001), 'two thousand one');
  assert.equal(numberToWords(375000), 'three hundred seventy-five thousand');
  assert.equal(numberToWords(1_000_000), undefined);
  assert.equal(yearWords(1999), 'nineteen ninety-nine');
  assert.equal(yearWords(1905), 'nineteen oh five');
  assert.equal(yearWords(1900), 'nineteen hundred');
  assert.equal(yearWords(2015), 'twenty fifteen');
  assert.equal(yearWords(2005), undefined); // "two thousand five" is already the plain reading
  assert.equal(yearWords(42), undefined);
  assert.deepEqual(answerAliases('42'), ['42', 'forty-two', 'forty two']);
  assert.deepEqual(answerAliases('9.9'), ['9.9', '9.90']);
  assert.deepEqual(answerAliases('2021-03-04'), ['2021-03-04', 'March 4, 2021', '4 March 2021']);
  assert.deepEqual(answerAliases('Frozen meals and desserts'), ['Frozen meals and desserts', 'Frozen meals & desserts']);
  assert.deepEqual(entityAliases('Nancy Edwards', true), ['Edwards, Nancy']);
  assert.deepEqual(entityAliases('Blue Harbor', false), []);
});
