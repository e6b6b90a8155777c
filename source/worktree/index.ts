export * from './git.js';
export * from './isolation.js';
export * from './worktree.js';
export * from './prepare.js';
