/** The side panel's pieces shared by the pages: a list of things to open, a page built around one, a labelled select. */
import type { ComponentChildren } from 'preact';
import { navigate } from '../routes.ts';

/** Links that open one item of a page (#/page?id=...), the current one marked. */
export function ItemList(props: { title: string; page: string; items: { id: string; label?: string }[]; active: string | null }) {
  return (
    <>
      <h3>{props.title}</h3>
      <ul class="runs">
        {props.items.map((it) => (
          <li>
            <a href={`#/${props.page}?id=${encodeURIComponent(it.id)}`} class={it.id === props.active ? 'active' : ''} onClick={(e) => (e.preventDefault(), navigate(props.page, { id: it.id }))}>
              {it.label ?? it.id}
            </a>
          </li>
        ))}
      </ul>
    </>
  );
}

/** A page of one item opened from a list: the list beside, the item's view (under its load error, if any) as children. */
export function ListPage(props: { title: string; page: string; items: { id: string; label?: string }[]; active: string | null; error: string | null; children: ComponentChildren }) {
  return (
    <div class="layout">
      <aside>
        <ItemList title={props.title} page={props.page} items={props.items} active={props.active} />
      </aside>
      <section class="content">
        {props.error ? <p class="error">{props.error}</p> : null}
        {props.children}
      </section>
    </div>
  );
}

export interface Choice {
  value: string;
  label: string;
  /** Choices with a group are shown under it (an <optgroup>), in the order the groups first appear. */
  group?: string;
}

/** A labelled <select>; `empty` is shown (and nothing can be chosen) when there is no choice. */
export function SelectField(props: { label: string; value: string; choices: Choice[]; onChange: (v: string) => void; empty?: string; testId?: string }) {
  const groups = [...new Set(props.choices.map((c) => c.group ?? ''))];
  const options = (cs: Choice[]) => cs.map((c) => <option value={c.value}>{c.label}</option>);
  return (
    <label class="field">
      {props.label}
      <select value={props.value} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)} data-testid={props.testId}>
        {props.choices.length === 0 ? <option value="">{props.empty ?? 'none'}</option> : null}
        {groups.map((g) => {
          const cs = props.choices.filter((c) => (c.group ?? '') === g);
          return g ? <optgroup label={g}>{options(cs)}</optgroup> : options(cs);
        })}
      </select>
    </label>
  );
}
