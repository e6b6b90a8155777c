export * from './common.js';
export * from './run.js';
export * from './goal.js';
export * from './event.js';
export * from './plant.js';
export * from './config.js';
export * from './operator-message.js';
export * from './history.js';
