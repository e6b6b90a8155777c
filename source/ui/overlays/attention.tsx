import { Text } from 'ink';
import React from 'react';
import type { AttentionItem } from '../../contracts/index.js';
import { age } from '../../format.js';
import { hint } from '../keymap.js';
import { fit } from '../layout.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** Props of {@link Attention}. */
export interface AttentionProps {
  /** The items not acknowledged, newest first (the snapshot's `attention`). */
  items: readonly AttentionItem[];
  /** The selected row; kept within the list. */
  selected: number;
  width: number;
  height: number;
  /** The clock for the ages (tests fix it). */
  now?: number;
}

/** The kind as the list shows it: one word, aligned. */
const KIND_WORDS: Record<AttentionItem['kind'], string> = { question: 'question', landing: 'review', budget: 'budget', run: 'failed', blocked: 'blocked' };

/**
 * The needs-you list (`!`; docs/attention/level2.md, "In the workbench"):
 * one line per item — kind, age, summary — the selected one marked, windowed
 * around the selection. It follows the snapshot: an answered question or an
 * acknowledged item drops out.
 */
export function Attention({ items, selected, width, height, now }: AttentionProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  const at = Math.max(0, Math.min(selected, items.length - 1));
  const start = Math.max(0, Math.min(at - h + 1, items.length - h));
  const from = Math.max(0, start);
  const when = now ?? Date.now();
  const note = `${items.length} · ${hint('attention.ack', 'ack')} · ${hint('attention.ackAll', 'ack all')} · ${hint('attention.open', 'go to goal')} · ${hint('back', 'back')}`;
  return (
    <Pane title="Needs you" note={note} width={width} height={height} focused>
      {items.length === 0 ? (
        <Text dimColor wrap="truncate">
          {fit('nothing needs you', w)}
        </Text>
      ) : (
        items.slice(from, from + h).map((item, i) => {
          const mine = from + i === at;
          return (
            <Text key={item.id} inverse={mine} color={item.kind === 'question' || item.kind === 'landing' ? 'cyan' : 'yellow'} wrap="truncate">
              {fit(`${mine ? '›' : ' '} ${KIND_WORDS[item.kind].padEnd(8)} ${age(item.since, new Date(when)).padStart(4)}  ${item.summary}`, w)}
            </Text>
          );
        })
      )}
    </Pane>
  );
}
