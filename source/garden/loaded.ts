/**
 * The PAK2.toml text each garden object was loaded from ({@link loadGarden}
 * records it): the first look of source/garden/reload.ts compares the file
 * with it, so an edit made between the load and that look is seen as one,
 * with the keys it changed.
 */
export const loadedText = new WeakMap<object, string>();
