export * from './reconcile.js';
export * from './live-runs.js';
export * from './lock.js';
export * from './coordinator.js';
export * from './reclaim.js';
export * from './tend-policy.js';
export * from './recover.js';
export * from './remote.js';
