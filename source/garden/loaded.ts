/**
 * The PAK2.toml text each garden was loaded from ({@link loadGarden}
 * records it), keyed by the garden's `paths` object (a copy of the garden
 * object keeps it): the first look of source/garden/reload.ts compares the
 * file with it, so an edit made between the load and that look is seen as
 * one, with the keys it changed, and a file unchanged since the load is
 * never read as a change.
 */
export const loadedText = new WeakMap<object, string>();
