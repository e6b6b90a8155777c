import { useInput, useStdin, type Key } from 'ink';
import { useCallback, useEffect, useRef } from 'react';
import { isNamedKey, TEXT_KEY } from '../keymap.js';
import { createInputFilter, type Verdict } from '../terminal-input.js';

/** How a key arrived: `paste` for text inside a bracketed paste (its line breaks are text). */
export interface KeyEvent {
  paste: boolean;
}

export type KeyHandler = (input: string, key: Key, event: KeyEvent) => void;

const TYPED: KeyEvent = { paste: false };
const PASTED: KeyEvent = { paste: true };

/**
 * The workbench's one input hook: Ink's `useInput`, with what the terminal
 * sends that is not a key filtered out (`terminal-input.ts`): reports and
 * replies are dropped whole, a bracketed paste arrives as text. The raw
 * event Ink's parser emits is seen first (a listener put before
 * `useInput`'s), so the handler gets Ink's parse of keys and nothing of
 * the rest. Keep `handler` stable (Ink re-subscribes otherwise).
 */
export function useKeys(handler: KeyHandler, options: { isActive: boolean }): void {
  const { internal_eventEmitter: emitter } = useStdin();
  const filter = useRef(createInputFilter());
  const verdict = useRef<Verdict>({ kind: 'key' });

  useEffect(() => {
    if (!options.isActive || !emitter) return;
    let settle: NodeJS.Immediate | undefined;
    const onRaw = (raw: string) => {
      verdict.current = filter.current.push(raw);
      // A report's tail comes in the same read; what comes later is typed.
      if (filter.current.expecting && !settle) {
        settle = setImmediate(() => {
          settle = undefined;
          filter.current.settle();
        });
      }
    };
    emitter.prependListener('input', onRaw);
    return () => {
      emitter.removeListener('input', onRaw);
      if (settle) clearImmediate(settle);
    };
  }, [options.isActive, emitter]);

  const onInput = useCallback(
    (input: string, key: Key) => {
      const v = verdict.current;
      verdict.current = { kind: 'key' };
      if (v.kind === 'drop') return;
      if (v.kind === 'sequence' && !isNamedKey(key)) return;
      if (v.kind === 'paste') return handler(v.text, TEXT_KEY, PASTED);
      if (v.kind === 'text') return handler(v.text, TEXT_KEY, TYPED);
      handler(input, key, TYPED);
    },
    [handler],
  );
  useInput(onInput, { isActive: options.isActive });
}
