/**
 * How far each scrolled view can go (rows), written by the view as it
 * draws: the run pane (rows back from the end) and the open overlay (rows
 * down from the top). `Infinity` while the view has not reached its end
 * (it wraps only the rows it shows): the next draw after a jump to the
 * top or the end knows it.
 */
export interface ScrollLimits {
  tail: number;
  overlay: number;
  /** Rows the open overlay shows: its page. */
  overlayRows: number;
}

/** `value` within 0 … `limit`. */
export function clampScroll(value: number, limit: number): number {
  return Math.max(0, Math.min(value, limit));
}
