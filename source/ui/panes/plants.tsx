import React from 'react';
import type { PlantView } from '../../snapshot/types.js';
import { fit, windowRange } from '../layout.js';
import { Lines } from '../lines.js';
import { innerHeight, innerWidth, Pane } from '../pane.js';

/** Props of {@link Plants}. */
export interface PlantsProps {
  plants: readonly PlantView[];
  cursor: number;
  width: number;
  height: number;
  focused: boolean;
}

/** The lines shown for the selected plant: active threads, memory, skills and knowledge indexes. */
export function plantLines(view: PlantView): { text: string; color?: string; bold?: boolean }[] {
  const lines: { text: string; color?: string; bold?: boolean }[] = [];
  lines.push({ text: `Active threads (${view.threads.length})`, bold: true });
  if (view.threads.length === 0) lines.push({ text: '  none', color: 'gray' });
  for (const t of view.threads) lines.push({ text: `  • ${t.title}${t.status ? ` [${t.status}]` : ''}${t.detail ? ` — ${t.detail}` : ''}` });
  lines.push({ text: 'Memory', bold: true });
  const memory = view.memory.trim();
  if (!memory) lines.push({ text: '  (blank: the next run loads the seed)', color: 'gray' });
  if (memory) for (const l of memory.split('\n').slice(0, 12)) lines.push({ text: `  ${l}` });
  lines.push({ text: 'Skills', bold: true }, ...view.skills.map((s) => ({ text: `  ${s}` })));
  lines.push({ text: 'Knowledge', bold: true }, ...view.knowledge.map((s) => ({ text: `  ${s}` })));
  return lines;
}

/** Plants: one line per plant, then the selected plant's threads, memory and indexes. */
export const Plants = React.memo(function Plants({ plants, cursor, width, height, focused }: PlantsProps): React.JSX.Element {
  const w = innerWidth(width);
  const h = innerHeight(height);
  if (plants.length === 0) {
    return (
      <Pane title="Plants" width={width} height={height} focused={focused}>
        <Lines lines={[{ text: fit('no plants: run pak2 genesis', w), dimColor: true }]} />
      </Pane>
    );
  }
  const listRows = Math.min(plants.length, Math.max(1, Math.floor(h / 3)));
  const [start, end] = windowRange(plants.length, cursor, listRows);
  const selected = plants[Math.min(cursor, plants.length - 1)]!;
  const detail = plantLines(selected).slice(0, Math.max(0, h - listRows));
  return (
    <Pane title="Plants" note={String(plants.length)} width={width} height={height} focused={focused}>
      <Lines
        lines={[
          ...plants.slice(start, end).map((p, i) => ({
            text: fit(`${p.plant.name} (${p.plant.seed}${p.plant.status === 'archived' ? ', archived' : ''}) · ${p.threads.length} threads`, w),
            inverse: start + i === cursor && focused,
            bold: start + i === cursor,
            color: p.plant.status === 'archived' ? 'gray' : undefined,
          })),
          ...detail.map((line) => ({ text: fit(line.text, w, false), color: line.color, bold: line.bold })),
        ]}
      />
    </Pane>
  );
});
