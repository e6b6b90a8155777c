export * from './git.js';
export * from './runtime-history.js';
export * from './baseline.js';
export * from './read.js';
