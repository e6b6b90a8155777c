export * from './files.js';
export * from './events.js';
export * from './goals.js';
export * from './runs.js';
export * from './plants.js';
export * from './conversations.js';
export * from './inbox.js';
//# sourceMappingURL=index.js.map