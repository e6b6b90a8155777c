import { Text, Transform, useIsScreenReaderEnabled } from 'ink';
import React from 'react';

/**
 * One screen line of a pane: its text, already fitted to the pane's width
 * (`fit`, `wrapLines`: sanitized, cut, one line), and its style, as the
 * props of Ink's `<Text>`.
 */
export interface StyledLine {
  text: string;
  color?: string | undefined;
  bold?: boolean | undefined;
  inverse?: boolean | undefined;
  dimColor?: boolean | undefined;
}

/** What each line's `<Text>` holds while Ink lays the frame out: one column, plain ASCII. */
const STAND_IN = ' ';

/** Control characters Ink's own sanitizer would look at; `fit` and `wrapLines` leave none. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');

/**
 * Lines as one Ink text node (issue 13). Each line is a `<Text>` with its
 * style holding a one-column stand-in, and a `<Transform>` puts the line's
 * text in place of the stand-in when Ink writes the frame: Ink styles the
 * line exactly as `<Text {...style}>{text}</Text>` would (the stand-in sits
 * between the same codes the text would), but measures and lays out a
 * handful of spaces instead of the text. Ink measures every text node of
 * the screen on every frame, with a grapheme segmenter as soon as a line
 * holds one character outside ASCII (`…`, `│`, `▸`, CJK): that was most of
 * a frame's time once the rows themselves were cached (`ink-rows.ts`), and
 * the largest share of its garbage. The lines also take one layout node
 * instead of one each, and a line whose text changes does not make Ink
 * measure the pane again.
 *
 * Each line must already fit the width it is drawn in and hold no line
 * break or control character (a line break is drawn as a space, a control
 * character dropped), and the lines must fit the height of their box, as
 * every pane's do: Ink shrinks the separate rows of an overflowing box
 * differently from one node of many lines. With a screen reader (Ink's screen-reader mode reads
 * the text, not the frame) the lines are plain `<Text>` rows.
 */
export function Lines({ lines: all }: { lines: readonly StyledLine[] }): React.JSX.Element | null {
  const reader = useIsScreenReaderEnabled();
  // An empty <Text> takes no row in Ink (the rows below it move up): so does an empty line here.
  const lines = all.some((line) => line.text === '') ? all.filter((line) => line.text !== '') : all;
  if (lines.length === 0) return null;
  if (reader) {
    return (
      <>
        {lines.map((line, i) => (
          <Text key={i} color={line.color} bold={line.bold} inverse={line.inverse} dimColor={line.dimColor} wrap="truncate">
            {line.text}
          </Text>
        ))}
      </>
    );
  }
  const texts = lines.map((line) => line.text);
  return (
    <Transform transform={(styled, index) => standIn(styled, texts[index])}>
      {lines.map((line, i) => (
        <React.Fragment key={i}>
          {i > 0 ? '\n' : null}
          <Text color={line.color} bold={line.bold} inverse={line.inverse} dimColor={line.dimColor}>
            {STAND_IN}
          </Text>
        </React.Fragment>
      ))}
    </Transform>
  );
}

/** `styled` (a stand-in between its style's codes) with `text` in place of the stand-in. */
function standIn(styled: string, text: string | undefined): string {
  const at = styled.indexOf(STAND_IN);
  if (at < 0 || text === undefined) return styled;
  const clean = text.includes('\n') ? text.replace(/\n/g, ' ') : text;
  return `${styled.slice(0, at)}${CONTROL.test(clean) ? clean.replace(CONTROLS, '') : clean}${styled.slice(at + STAND_IN.length)}`;
}
